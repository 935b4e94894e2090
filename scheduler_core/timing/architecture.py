"""What a non-Llama decoder holds beyond ModelSpec's shape: its attention layer groups (MLA,
sliding windows, linear attention), its experts, and its weights as stored, per GPU.

A dense Llama-shaped model has no Architecture (ModelSpec.arch is None) and keeps memory.py's
formula. For the others, each projection is counted as vLLM 0.33.0's model files build it
(deepseek_v2.py, qwen3_moe.py, qwen3_next.py, gpt_oss.py, llama4.py, gemma3.py, mixtral.py):
column- and row-parallel layers split over TP, the MLA down-projections (q_a_proj, kv_a_proj) and
the routers replicated, embeddings and norms in the activation dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..utils import cdiv
from .attention_specs import MAMBA, MLA, LayerGroup
from .moe import ExpertPlacement, MoeSpec
from .weight_formats import WeightFormat, weight_format

ACT_BYTES = 2


@dataclass(frozen=True)
class MlaShape:
    q_lora_rank: int  # 0: q projected straight from the hidden state (DeepSeek-V2-Lite)
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class LinearAttentionShape:
    """Gated DeltaNet (Qwen3-Next): key/value heads and dims, and the short convolution's kernel."""

    num_k_heads: int
    num_v_heads: int
    head_k_dim: int
    head_v_dim: int
    conv_kernel: int


@dataclass(frozen=True)
class Architecture:
    groups: tuple[LayerGroup, ...]
    moe: MoeSpec | None = None
    dense_mlp_layers: int = 0  # layers with a dense MLP of dense_inter (first_k_dense_replace, interleaving)
    dense_inter: int = 0
    mla: MlaShape | None = None
    linear_attention: LinearAttentionShape | None = None
    attn_output_gate: bool = False  # Qwen3-Next: q_proj also emits a gate per head
    linear_format: str = "bf16"
    vision_params: int = 0  # a multimodal checkpoint's vision tower and projector, in bf16
    rotary_dim: int = 0


def _mxfp4_padding(gpu) -> tuple[int, int]:
    """Rounding (hidden, intermediate) of MXFP4 experts by the kernel vLLM picks for gpt-oss
    (fused_moe/oracle/mxfp4.py): FlashInfer TRT-LLM on Blackwell (256, 128), Triton on Hopper
    (1, 64), Marlin before Hopper (256, 128), AITER/Triton on ROCm (256, 256)."""
    generation = getattr(gpu, "generation", "hopper") if gpu is not None else "hopper"
    return {"blackwell": (256, 128), "hopper": (1, 64), "cdna3": (256, 256)}.get(generation, (256, 128))


class WeightInventory:
    """One GPU's share of the checkpoint, split as a step reads it: the weights every step reads,
    and one routed expert of one MoE layer (read per expert touched)."""

    def __init__(self, model, placement: ExpertPlacement, gpu=None):
        arch: Architecture = model.arch
        self.model, self.arch, self.placement = model, arch, placement
        tp = placement.tp
        self.fmt: WeightFormat = weight_format(arch.linear_format)
        h = model.hidden
        attention = sum(self._attention_layer_bytes(g, tp) for g in arch.groups)
        dense_mlp = arch.dense_mlp_layers * self._bytes(3 * arch.dense_inter // tp, h)
        moe = arch.moe
        routers = shared = experts = expert_each = 0.0
        self.experts_per_gpu = 0
        self.expert_format: WeightFormat | None = None
        if moe:
            efmt = self.expert_format = weight_format(moe.expert_format or arch.linear_format)
            pad_h, pad_i = _mxfp4_padding(gpu) if efmt.name == "mxfp4" else (1, 1)
            hidden_p = cdiv(h, pad_h) * pad_h
            inter_p = placement.inter_per_gpu(moe, pad_i)
            expert_each = efmt.matrix_bytes(2 * inter_p, hidden_p) + efmt.matrix_bytes(hidden_p, inter_p)
            if moe.expert_bias:
                expert_each += (2 * inter_p + hidden_p) * ACT_BYTES
            self.experts_per_gpu = placement.experts_per_gpu(moe)
            experts = moe.num_moe_layers * self.experts_per_gpu * expert_each
            routers = moe.num_moe_layers * moe.num_experts * h * ACT_BYTES
            shared = moe.num_moe_layers * self._bytes(3 * moe.shared_expert_inter // tp, h)
        vocab_shard = cdiv(cdiv(model.vocab, tp), 64) * 64
        embeddings = (1 if model.tie_word_embeddings else 2) * vocab_shard * h * ACT_BYTES
        norms = (2 * model.layers + 1) * h * ACT_BYTES
        rotary = model.max_position_embeddings * (arch.rotary_dim or model.head_dim) * ACT_BYTES
        vision = arch.vision_params * ACT_BYTES // tp
        self.linear_bytes = attention + dense_mlp + shared  # the projections in the checkpoint's linear format
        self.expert_bytes_each = expert_each  # one routed expert of one layer on this GPU
        self.expert_bytes = experts
        self.always_read_bytes = attention + dense_mlp + routers + shared + vocab_shard * h * ACT_BYTES
        self.total_bytes = int(attention + dense_mlp + routers + shared + experts + embeddings + norms + rotary + vision)

    def _bytes(self, rows: int, cols: int) -> float:
        return self.fmt.matrix_bytes(rows, cols) if rows and cols else 0.0

    def _attention_layer_bytes(self, g: LayerGroup, tp: int) -> float:
        m, h = self.model, self.model.hidden
        heads = m.heads // tp
        if g.kind == MLA:
            s = self.arch.mla
            q = (self._bytes(s.q_lora_rank, h) + self._bytes(heads * (s.qk_nope_head_dim + s.qk_rope_head_dim), s.q_lora_rank)
                 if s.q_lora_rank else self._bytes(heads * (s.qk_nope_head_dim + s.qk_rope_head_dim), h))
            kv = self._bytes(s.kv_lora_rank + s.qk_rope_head_dim, h) + self._bytes(
                heads * (s.qk_nope_head_dim + s.v_head_dim), s.kv_lora_rank)
            per_layer = q + kv + self._bytes(h, heads * s.v_head_dim)
        elif g.kind == MAMBA:
            s = self.arch.linear_attention
            key_dim, value_dim = s.num_k_heads * s.head_k_dim // tp, s.num_v_heads * s.head_v_dim // tp
            per_layer = (self._bytes(2 * key_dim + 2 * value_dim, h) + self._bytes(2 * s.num_v_heads // tp, h)
                         + self._bytes(h, value_dim) + (2 * key_dim + value_dim) * s.conv_kernel * ACT_BYTES)
        else:
            q_rows = heads * g.head_size * (2 if self.arch.attn_output_gate else 1)
            kv_rows = 2 * g.kv_heads_per_gpu(tp) * g.head_size
            per_layer = self._bytes(q_rows + kv_rows, h) + self._bytes(h, heads * g.head_size)
        return g.num_layers * per_layer

    def linear_gemms_per_step(self) -> int:
        """GEMM launches of one step outside the experts and the LM head, as vLLM 0.33's model files
        build them: an MLA layer's fused q_a/kv_a down-projection, q_b_proj and o_proj (q_proj,
        kv_a_proj and o_proj without a q LoRA), a softmax-attention layer's qkv_proj and o_proj, a
        linear-attention layer's two input projections and out_proj; gate_up and down for each dense
        MLP and each shared expert."""
        per_kind = {MLA: 3, MAMBA: 3}
        attention = sum(g.num_layers * per_kind.get(g.kind, 2) for g in self.arch.groups)
        moe = self.arch.moe
        shared = moe.num_moe_layers if moe and moe.shared_expert_inter else 0
        return attention + 2 * (self.arch.dense_mlp_layers + shared)

    def active_params_per_token(self) -> float:
        """Parameters one token multiplies through on this GPU: everything but the routed experts,
        plus k of them per MoE layer (the LM head is charged apart)."""
        m, arch = self.model, self.arch
        bytes_per_param = self.fmt.bits / 8
        dense = (self.always_read_bytes - m.vocab * m.hidden * ACT_BYTES / self.placement.tp) / bytes_per_param
        if not arch.moe:
            return dense
        return dense + self.routed_expert_params_per_token()

    def routed_expert_params_per_token(self) -> float:
        """The routed experts' share of one token's parameters on this GPU: k experts a layer, of which
        this GPU holds E/EP whole ones (EP) or a 1/(TP x DP) slice of each (moe.py)."""
        moe = self.arch.moe
        if not moe:
            return 0.0
        k_per_gpu = moe.experts_per_token * self.experts_per_gpu / moe.num_experts
        inter = self.placement.inter_per_gpu(moe)
        return moe.num_moe_layers * k_per_gpu * 3 * self.model.hidden * inter
