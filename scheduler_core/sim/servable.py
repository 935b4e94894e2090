"""Whether an engine could ever serve a request: its prompt within max_model_len, its longest context
within the KV pool (above V0's watermark), and its id not seen before."""

from __future__ import annotations

from collections.abc import Sequence

from ..engine.config import EngineConfig
from ..engine.policies.vllm_v0 import watermark_blocks
from ..errors import ConfigError
from ..utils import cdiv
from ..workload.workload import RequestSpec


def check_servable(config: EngineConfig, specs: Sequence[RequestSpec], check_ids: bool = True) -> None:
    """Raise ConfigError, naming the request's field, for the first request this engine could never serve."""
    usable_blocks = config.num_gpu_blocks - 1
    if config.policy == "vllm-v0":
        # V0 admits only above its watermark (vLLM V0 would mark such a request ignored).
        usable_blocks -= watermark_blocks(config.num_gpu_blocks)
    seen = set()
    for spec in specs:
        where = f"workload[{spec.request_id}]"
        if check_ids:
            if spec.request_id in seen:
                raise ConfigError(f"{where}.request_id", "duplicate request id")
            seen.add(spec.request_id)
        if len(spec.prompt_token_ids) > config.max_model_len:
            raise ConfigError(
                f"{where}.prompt_token_ids",
                f"prompt of {len(spec.prompt_token_ids)} tokens exceeds max_model_len={config.max_model_len}",
            )
        if config.kv_allocator == "contiguous":
            needed = cdiv(config.max_model_len, config.block_size)
        else:
            needed = cdiv(min(len(spec.prompt_token_ids) + spec.max_tokens, config.max_model_len), config.block_size)
        if needed > usable_blocks:
            raise ConfigError(
                "num_gpu_blocks",
                f"request {spec.request_id} needs {needed} blocks at its longest but the pool has {usable_blocks}",
            )
