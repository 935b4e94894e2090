"""The KV block sizes `vllm serve --block-size` takes, by release, so a scenario that vLLM would
refuse is refused here too, with vLLM's reason.

- Up to 0.17: the flag's choices are CacheConfig's `BlockSize` literal (vllm/config/cache.py):
  1, 8, 16, 32, 64, 128, and 256 from 0.11.1; argparse refuses anything else.
- From 0.18: CacheConfig takes any positive integer, and the choice moves to the attention
  backend: on a CUDA GPU FlashAttention and Triton take multiples of 16
  (`get_supported_kernel_block_sizes`: MultipleOf(16), vllm/v1/attention/backends/), so vLLM finds
  no backend for 7 or 8 and stops at startup.
"""

from __future__ import annotations

from .releases import VllmRelease, release_key

LITERAL_BLOCK_SIZES = (1, 8, 16, 32, 64, 128)
LITERAL_BLOCK_SIZES_FROM_0_11_1 = (*LITERAL_BLOCK_SIZES, 256)
KERNEL_BLOCK_MULTIPLE = 16


def block_size_refusal(block_size: object, release: VllmRelease) -> str | None:
    """Why `release` refuses `block_size`, in its words; None when it takes it. A value that is not
    a positive integer is left to the setting's bound."""
    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1:
        return None
    key = release_key(release.version)
    if key < release_key("0.18.0"):
        choices = LITERAL_BLOCK_SIZES_FROM_0_11_1 if key >= release_key("0.11.1") else LITERAL_BLOCK_SIZES
        if block_size not in choices:
            return (f"vLLM {release.version} takes --block-size {', '.join(map(str, choices))} only "
                    f"(invalid choice: {block_size})")
        return None
    if block_size % KERNEL_BLOCK_MULTIPLE:
        return (f"vLLM {release.version}'s attention backends on a CUDA GPU (FlashAttention, Triton) take block sizes "
                f"that are multiples of {KERNEL_BLOCK_MULTIPLE}: no valid attention backend for block_size {block_size}")
    return None
