"""How long a step takes: a roofline over the step's batch, fitted to measured H200 steps.

A step reads every weight once and does 2 FLOPs per weight per token (the linear layers); each
request then reads its cached K and V and does attention over them (only what each layer sees where
layers have sliding windows, local chunks or a recurrent state: attention_cost.py). Each of the two parts takes
a smooth maximum of its compute time and its memory time (`(a^p + b^p)^(1/p)`: near a roofline's
corner both limits cost something). Activation traffic, a fixed per-step and per-layer latency,
and with tensor parallelism two all-reduces per layer complete the step (on GPUs joined only by
PCIe, at the cost of the all-reduce vLLM picks there: scheduler_core/timing/all_reduce.py).

The rates are the GPU's *achievable* ceilings (for the H200, measured by the calibration run;
for other GPUs, the H200's scaled by published kernel benchmarks where they exist, kernel_rates.py,
else their datasheet peaks scaled by what the H200 achieves of its own datasheet), and
`Efficiency` holds the fitted fractions of them. `benchmarks/bench_cost_model.py` refits them
and reports the error on measured steps held out of the fit. What the calibration's dense GEMMs do not
cover (the fused-MoE layer, block-FP8 GEMMs, MLA's two kernels) costs what those kernels were measured
to cost (moe_kernels.py, mla_cost.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import ConfigError
from .all_reduce import PcieAllReduce, custom_all_reduce_latency_s
from .attention_cost import GroupedAttention, smooth_max
from .attention_specs import CHUNKED_LOCAL, MAMBA, MLA, SLIDING_WINDOW
from .kernel_rates import CALIBRATION_KERNELS, AttentionKernels, attention_compute_speed, kv_read_speed
from .moe import ExpertPlacement, MoeDispatch, dispatch_bandwidth

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1}


@dataclass(frozen=True)
class ModelSpec:
    """A Llama-shaped decoder: its shape, how its weights and KV cache are stored, and (from its
    config.json) whether the LM head shares the embedding and the longest context it takes."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    inter: int
    vocab: int
    wdtype: str = "bf16"
    kv_dtype: str = "bf16"
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 131072
    # Experts, MLA, sliding windows, linear attention or a weight format beyond bf16/fp16/fp8
    # (architecture.Architecture); None for a dense Llama-shaped decoder.
    arch: object = None

    @property
    def params_per_layer(self) -> int:
        qkv = self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim
        out = self.heads * self.head_dim * self.hidden
        mlp = 3 * self.hidden * self.inter  # gate, up and down projections
        return qkv + out + mlp

    @property
    def weight_bytes(self) -> int:
        """Weights read by one step: every layer plus the LM head (the embedding is only indexed)."""
        return (self.layers * self.params_per_layer + self.hidden * self.vocab) * DTYPE_BYTES[self.wdtype]

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of one token across all layers."""
        return 2 * self.layers * self.kv_heads * self.head_dim * DTYPE_BYTES[self.kv_dtype]

    def kv_group_bytes_per_token(self, tp: int) -> int:
        """One token's KV summed over the `tp` GPUs of a tensor-parallel group, as the layer groups'
        pages hold it (attention_specs.py): an MLA latent sits whole on every GPU, so the group holds
        `tp` copies; sliding-window and chunked layers are counted as keeping the token (an upper
        bound), state layers not at all. A dense Llama-shaped decoder keeps `kv_bytes_per_token`."""
        if self.arch is None:
            return self.kv_bytes_per_token
        kv = DTYPE_BYTES[self.kv_dtype]
        return tp * sum(g.num_layers * g.bytes_per_token(tp, kv) for g in self.arch.groups)


@dataclass(frozen=True)
class GpuSpec:
    """Achievable ceilings of one GPU (not datasheet peaks; see `gpu_from_datasheet`)."""

    name: str
    bf16_flops: float
    fp8_flops: float
    mem_bandwidth: float  # bytes/s, counted as the calibration's copy test counts them
    mem_bytes: float
    interconnect_bandwidth: float  # bytes/s per direction between tensor-parallel peers
    pcie_bandwidth: float = 25e9  # bytes/s host <-> device, for swap preemption
    # Whether every pair of tensor-parallel peers shares NVLink (vLLM's `is_fully_connected`):
    # without it vLLM runs NCCL for groups of more than two GPUs.
    nvlink_fully_connected: bool = True
    fp4_flops: float = 0.0  # 0: no FP4 tensor cores (before Blackwell)
    int8_flops: float = 0.0  # 0: INT8 runs at the fp8 rate (Hopper, Ada)
    generation: str = "hopper"  # picks vLLM's kernels: ampere, ada, hopper, blackwell, cdna3
    # vLLM's attention backend there: its prefill rate and fp8 KV path (kernel_rates.py).
    attention: AttentionKernels = CALIBRATION_KERNELS

    def matmul_flops(self, wdtype: str) -> float:
        return self.fp8_flops if wdtype == "fp8" else self.bf16_flops


@dataclass(frozen=True)
class Efficiency:
    """Fitted fractions of the ceilings, and fixed latencies (fit: benchmarks/bench_cost_model.py)."""

    weight_read: float = 1.509
    linear_compute: float = 1.034
    kv_read: float = 1.599
    attention_compute: float = 0.4668
    roofline_sharpness: float = 6.675
    # The GPU's own fixed time per step (the calibration times the forward pass alone; the host's
    # work between steps is `host_time.HostTime`, charged by the simulation).
    step_overhead_s: float = 0.0
    layer_overhead_s: float = 6.765e-5
    activation_traffic: float = 6.825
    # In a mixed step, prompt chunks and decodes share one variable-length attention launch shaped
    # for the prompts: each decode then fills a whole tile of query rows against its context, not
    # one row, so it costs compute as if it had this many query tokens (fitted on the mixed steps).
    mixed_decode_query_rows: float = 27.80
    # vLLM's custom all-reduce (one-shot over NVLink): latency per call; its bandwidth term uses the
    # interconnect. Groups that vLLM hands to NCCL over PCIe cost what all_reduce.py says instead.
    allreduce_latency_s: float = 8e-6

    @classmethod
    def from_vector(cls, values: list[float]) -> "Efficiency":
        w, lin, kv, att, p, c0, cl, act, rows = values
        return cls(w, lin, kv, att, p, c0 * 1e-3, cl * 1e-5, act, rows * 100)

    def to_vector(self) -> list[float]:
        """The fitted parameters, scaled so each is of order one (what the optimiser moves)."""
        return [
            self.weight_read,
            self.linear_compute,
            self.kv_read,
            self.attention_compute,
            self.roofline_sharpness,
            self.step_overhead_s * 1e3,
            self.layer_overhead_s * 1e5,
            self.activation_traffic,
            self.mixed_decode_query_rows / 100,
        ]


class CostModel:
    """Step time of a batch for one model on `tp` GPUs of one kind; with `placement`, one data-parallel
    rank of a deployment whose MoE layers span TP x DP GPUs (moe.py)."""

    def __init__(self, model: ModelSpec, gpu: GpuSpec, tp: int = 1, efficiency: Efficiency = Efficiency(),
                 placement: ExpertPlacement | None = None, vllm_version: str | None = None):
        if not isinstance(tp, int) or tp < 1:
            raise ConfigError("tp", f"must be a positive integer, got {tp!r}")
        self.placement = placement or ExpertPlacement(tp)
        if self.placement.tp != tp:
            raise ConfigError("tp", f"the expert placement is for TP {self.placement.tp}, not {tp}")
        self.model, self.gpu, self.tp, self.efficiency = model, gpu, tp, efficiency
        self._dispatch = MoeDispatch(self.placement.dp, model.hidden, dispatch_bandwidth(gpu, self.placement.moe_world),
                                     efficiency.allreduce_latency_s)
        self._expert_s_per_token = 0.0
        eff, m = efficiency, model
        bandwidth = gpu.mem_bandwidth
        self._weight_s = m.weight_bytes / tp / (bandwidth * eff.weight_read)
        linear_rate = gpu.matmul_flops(m.wdtype) * eff.linear_compute
        self._linear_s_per_token = 2 * m.layers * m.params_per_layer / tp / linear_rate
        self._lm_head_s_per_seq = 2 * m.hidden * m.vocab / tp / linear_rate
        self._set_attention_rates(vllm_version)
        self._kv_s_per_token = m.kv_bytes_per_token / tp / self._kv_read_bandwidth
        # Q.K^T and A.V: 2 matmuls x 2 FLOPs per (query token, key token, head dim, head).
        self._attention_s_per_pair = 4 * m.layers * m.heads * m.head_dim / tp / self._attention_flops
        activation_bytes_per_token = m.layers * (4 * m.hidden + 3 * m.inter) * 2 / tp
        self._activation_s_per_token = activation_bytes_per_token * eff.activation_traffic / bandwidth
        self._fixed_s = eff.step_overhead_s + eff.layer_overhead_s * m.layers
        self._moe = None
        self._grouped_attention = None  # layers that see less than every cached token (attention_cost.py)
        self._mla_attention = None  # MLA's decode and prompt kernels (mla_cost.py)
        if m.arch is not None:
            self._use_inventory(gpu, tp, eff)
        # Two all-reduces of the hidden state per layer (after attention and after the MLP).
        self._allreduce_s_per_token = 0.0
        self._pcie_all_reduce = None
        if tp > 1 and not gpu.nvlink_fully_connected:
            # Costed per call: which all-reduce vLLM runs over PCIe depends on the group and message size.
            self._pcie_all_reduce = PcieAllReduce(tp, gpu.interconnect_bandwidth, eff.allreduce_latency_s)
        elif tp > 1:
            # NVLink: vLLM's custom all-reduce, folded into a per-token and a fixed term. Where vLLM
            # uses NCCL over NVLink instead (messages from 8 MiB, groups of 3, 5, 7 or over 8) the
            # same cost is charged: no independent figure for it here.
            ring_bytes_per_token = 2 * (tp - 1) / tp * m.hidden * 2
            self._allreduce_s_per_token = 2 * m.layers * ring_bytes_per_token / gpu.interconnect_bandwidth
            self._fixed_s += 2 * m.layers * custom_all_reduce_latency_s(tp, eff.allreduce_latency_s)

    def step_time(self, chunks: Iterable[tuple[int, int]], num_sampled: int,
                  moe_num_tokens: int | None = None) -> tuple[float, dict[str, float]]:
        """Seconds for one step; `chunks` are (new tokens, cached tokens before) per request. Under data
        parallelism `moe_num_tokens` is what the MoE layers see: the tokens of every DP rank's batch."""
        num_tokens = attention_pairs = kv_tokens_read = decode_context = 0
        has_prompt_chunk = False
        if self._grouped_attention is not None:
            chunks = list(chunks)  # read twice: here and per layer group
        for num_new, num_cached in chunks:
            num_tokens += num_new
            # Causal attention: new token i sees the cached tokens and the new ones up to itself.
            attention_pairs += num_new * num_cached + num_new * (num_new + 1) // 2
            kv_tokens_read += num_cached + num_new
            if num_new == 1:
                decode_context += num_cached + 1
            else:
                has_prompt_chunk = True
        if num_tokens == 0:
            return 0.0, {}
        if self._mla_attention is not None:  # a decode's pairs are its keys: cached + 1
            mla_prompt = (attention_pairs - decode_context, kv_tokens_read - decode_context)
        if has_prompt_chunk:
            attention_pairs += (self.efficiency.mixed_decode_query_rows - 1) * decode_context
        p = self.efficiency.roofline_sharpness
        weight_s = self._weight_s
        moe_tokens = num_tokens if moe_num_tokens is None else moe_num_tokens
        linear_compute_s = num_tokens * self._linear_s_per_token + num_sampled * self._lm_head_s_per_seq
        dispatch_s = 0.0
        if self._moe is not None:  # the experts the (DP group's) tokens route to (moe.py)
            moe, expert_s = self._moe
            weight_s += moe.num_moe_layers * moe.expected_distinct_experts(moe_tokens) * expert_s
            # The experts' GEMMs for the other ranks' tokens routed here (none without DP).
            linear_compute_s += (moe_tokens - num_tokens) * self._expert_s_per_token
            dispatch_s = moe.num_moe_layers * self._dispatch.seconds(moe_tokens)
        linear_s = smooth_max(weight_s, linear_compute_s, p)
        if self._mla_attention is not None:
            attention_s = self._mla_attention.seconds(*mla_prompt, decode_context, decode_context, p)
        elif self._grouped_attention is None:
            attention_s = smooth_max(kv_tokens_read * self._kv_s_per_token, attention_pairs * self._attention_s_per_pair, p)
        else:
            attention_s = self._grouped_attention.seconds(chunks, has_prompt_chunk, p)
        other_s = self._fixed_s + num_tokens * (self._activation_s_per_token + self._allreduce_s_per_token)
        other_s += self._pcie_all_reduces_s(num_tokens) + dispatch_s
        breakdown = {"linear": linear_s, "attention": attention_s, "other": other_s}
        return linear_s + attention_s + other_s, breakdown

    def _set_attention_rates(self, vllm_version: str | None) -> None:
        """The KV read's bandwidth and the attention FLOP/s: the calibration's fractions of the backend's
        ceilings on this GPU, for the cache's dtype (kernel_rates.py). An MLA model's FP8 path (FlashMLA)
        has no published figure: its fp8 cache only halves the bytes."""
        m, eff, kernels = self.model, self.efficiency, self.gpu.attention
        kv_dtype, head_dim = m.kv_dtype, m.head_dim
        if m.arch is not None and m.arch.mla is not None:
            kv_dtype = "bf16"  # the rates' dtype only: the bytes stay fp8's
            # MLA's prompt chunks run the prefill kernel on decompressed heads: queries and keys of
            # nope + rope dims (192 for DeepSeek), not the latent's per-head share.
            head_dim = m.arch.mla.qk_nope_head_dim + m.arch.mla.qk_rope_head_dim
        read_speed = kv_read_speed(kernels, kv_dtype, head_dim, vllm_version)
        ceiling = kernels.prefill_ceiling(head_dim, Efficiency.attention_compute) or self.gpu.bf16_flops
        self._kv_read_bandwidth = self.gpu.mem_bandwidth * eff.kv_read * read_speed
        self._attention_flops = ceiling * attention_compute_speed(kernels, kv_dtype, head_dim) * eff.attention_compute

    def _use_inventory(self, gpu: "GpuSpec", tp: int, eff: "Efficiency") -> None:
        """Experts, MLA or other formats (architecture.py): every step reads the always-read weights
        and the experts its tokens touch, and computes on the active parameters only."""
        from .architecture import WeightInventory  # architecture imports this module's dataclasses
        from .mla_cost import MlaAttention
        from .moe_kernels import BLOCK_FP8_GENERATIONS, BlockFp8Linears, FusedMoeKernel
        from .weight_formats import matmul_flops

        inventory = WeightInventory(self.model, self.placement, gpu)
        bandwidth = gpu.mem_bandwidth * eff.weight_read
        rate = matmul_flops(gpu, inventory.fmt) * eff.linear_compute
        self._weight_s = inventory.always_read_bytes / bandwidth
        if inventory.fmt.name == "fp8-block" and gpu.generation in BLOCK_FP8_GENERATIONS:  # moe_kernels.py
            block = BlockFp8Linears.on(gpu)
            self._weight_s += inventory.linear_bytes * (1 / block.read_bytes_per_s - 1 / bandwidth)
            self._fixed_s += inventory.linear_gemms_per_step() * block.launch_s
            rate = block.flops_per_s
        expert_rate = rate
        if self.model.arch.moe is not None:
            # Each touched expert, on this GPU: its shard (TP) or, under EP, a share of the experts,
            # at the fused-MoE kernel's rates, and the kernel's fixed time per layer (moe_kernels.py).
            moe = self.model.arch.moe
            kernel = FusedMoeKernel.on(gpu, inventory.expert_format.bits)
            share = inventory.experts_per_gpu / moe.num_experts
            self._moe = (moe, share * inventory.expert_bytes_each / (kernel.read_bytes_per_s or bandwidth))
            self._fixed_s += moe.num_moe_layers * kernel.layer_s
            expert_rate = kernel.flops_per_s or expert_rate
        # KV read per token from the layer groups' pages (an MLA latent, not 128 heads of K and V).
        kv_bytes = sum(g.num_layers * g.bytes_per_token(tp, DTYPE_BYTES[self.model.kv_dtype]) for g in self.model.arch.groups)
        self._kv_s_per_token = kv_bytes / self._kv_read_bandwidth
        groups = self.model.arch.groups
        if any(g.kind in (SLIDING_WINDOW, CHUNKED_LOCAL, MAMBA) for g in groups):
            # Full-attention and MLA layers alone keep the formula above (every layer sees every token).
            self._grouped_attention = GroupedAttention(
                groups, self.model.heads / tp, self.model.head_dim, tp, DTYPE_BYTES[self.model.kv_dtype],
                self._kv_read_bandwidth, self._attention_flops, eff.mixed_decode_query_rows)
        routed = inventory.routed_expert_params_per_token()
        self._expert_s_per_token = 2 * routed / expert_rate
        self._linear_s_per_token = 2 * (inventory.active_params_per_token() - routed) / rate + self._expert_s_per_token
        mla = self.model.arch.mla
        if mla is not None and all(g.kind == MLA for g in groups):
            self._mla_attention = MlaAttention.build(mla, self.model.heads / tp, self.model.layers, self._kv_s_per_token,
                                                     gpu.bf16_flops, self._attention_flops)

    def _pcie_all_reduces_s(self, num_tokens: int) -> float:
        """A step's NCCL all-reduces over PCIe (two a layer, of the tokens' hidden states), where vLLM
        runs them; NVLink's are in the fixed and per-token terms."""
        if self._pcie_all_reduce is None:
            return 0.0
        return 2 * self.model.layers * self._pcie_all_reduce.seconds(num_tokens * self.model.hidden * 2)

    def draft_time(self, method: str, num_speculative_tokens: int, num_seqs: int) -> float:
        """Proposing K drafts for a batch. EAGLE/MTP heads are about one decoder layer run once per
        draft position (its weights, its launch, and the LM head over the batch); a separate draft
        model is taken as a tenth of the target per position; n-gram lookup runs on the CPU."""
        if method == "ngram":
            return 0.0
        m, eff = self.model, self.efficiency
        per_position = self._weight_s / m.layers + eff.layer_overhead_s + num_seqs * self._lm_head_s_per_seq
        if method == "draft_model":
            # A tenth of the target's step for a token: its weights and fixed latencies, all-reduces included.
            per_position = 0.1 * (self._weight_s + self._fixed_s + self._pcie_all_reduces_s(1))
        return num_speculative_tokens * per_position

    def prefill_time(self, num_tokens: int, num_cached: int = 0) -> float:
        return self.step_time([(num_tokens, num_cached)], 1)[0]

    def decode_time(self, batch: int, context: int) -> float:
        return self.step_time([(1, context)] * batch, batch)[0]

    def swap_time(self, num_blocks: int, block_size: int) -> float:
        """PCIe time to move `num_blocks` KV blocks between GPU and CPU memory (each GPU its shard, or
        for MLA its whole copy of the latent)."""
        return num_blocks * block_size * self.model.kv_group_bytes_per_token(self.tp) / self.tp / self.gpu.pcie_bandwidth
