"""Efficiency profiles: how far below the datasheet peaks a given software stack runs.

A profile is data (``specs/profiles/*.yaml``), calibrated against measurements; a calibration file measured on
the user's own card (``estimator calibrate``) overrides it. Every time the estimator reports has a *bound*
(datasheet peaks, no profile) and an *expected* value (this profile applied).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from estimator.catalog.specs import MemoryType

# Ceilings of a profile's numbers: each far past any software stack (the shipped profiles hold microseconds and
# hundreds of MB), so a typo or a hostile file is refused instead of estimated.
MAX_STEP_S = 1.0  # a host or kernel cost per layer, per operation, per step: shipped ones are µs to ms
MAX_BYTES = 10**13  # runtime memory (context, workspace, NCCL buffers): a GPU's 10,000 GB (GpuSpec.memory_gb)
MAX_PASSES = 1_000.0  # elementwise passes over the hidden or FFN activations per layer: shipped ones are under 20
MAX_OPS = 1_000_000  # aten operations one layer dispatches: shipped ones are under 200
MAX_CHUNK_TOKENS = 2**24  # a prefill chunk: at most the longest context (architecture.MAX_WIDTH)

Seconds = Annotated[float, Field(ge=0, le=MAX_STEP_S)]
Ops = Annotated[int, Field(ge=0, le=MAX_OPS)]
Passes = Annotated[float, Field(ge=0, le=MAX_PASSES)]


ElementRate = Annotated[float, Field(gt=0, le=1e15)]
SignedOps = Annotated[int, Field(ge=-MAX_OPS, le=MAX_OPS)]
StepOps = tuple[Ops, Ops, Ops, Ops, Ops, Ops]
LayerOps = tuple[SignedOps, SignedOps, SignedOps, SignedOps]


class TrainOps(BaseModel):
    """The aten operations one family's eager training step dispatches (`estimator.training.host_ops`): per precision
    ``[forward, backward, checkpointed forward, checkpointed backward]`` per decoder layer of a multi-head model, then
    ``[forward, backward]`` outside the layers (embedding, final norm, head, loss); per attention case the four
    per-layer phases beyond those (one KV head; PyTorch's math kernel with grouped or one KV head, fp32)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    bf16: StepOps
    amp: StepOps
    fp32: StepOps
    fused_single: LayerOps = (0, 0, 0, 0)
    math_grouped: LayerOps = (0, 0, 0, 0)
    math_single: LayerOps = (0, 0, 0, 0)


class DecodeAttentionTiles(BaseModel):
    """A decode attention kernel's tiles (`estimator.model.decode_attention`): a tile holds ``query_rows`` query heads
    of one KV head and walks that head's cache; the kernel is built for the ``head_dims`` widths (ascending), a head
    dim runs the first that holds it, and tiles ``full_width_from`` wide or wider cost their whole width whatever the
    head dim, at ``full_width_efficiency`` of the narrower tiles' rate; a further tile walking a cache another tile of
    its KV head walks costs ``reread_fraction`` of the first walk (the rest comes from L2)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    query_rows: int = Field(gt=0, le=MAX_OPS)
    head_dims: tuple[Annotated[int, Field(gt=0, le=MAX_OPS)], ...] = Field(min_length=1)
    # one of head_dims; None: no tile costs more than the head dim's bytes
    full_width_from: Annotated[int, Field(gt=0, le=MAX_OPS)] | None
    full_width_efficiency: float = Field(gt=0, le=1)
    reread_fraction: float = Field(ge=0, le=1)

    @field_validator("head_dims")
    @classmethod
    def _ascending(cls, dims: tuple[int, ...]) -> tuple[int, ...]:
        if list(dims) != sorted(set(dims)):
            raise ValueError(f"give each tile width once, narrowest first: {sorted(set(dims))}")
        return dims

    @model_validator(mode="after")
    def _full_width_is_a_tile(self) -> DecodeAttentionTiles:
        if self.full_width_from is not None and self.full_width_from not in self.head_dims:
            raise ValueError(f"full_width_from {self.full_width_from} is not one of head_dims "
                             f"{list(self.head_dims)} (null: no full-width tile)")
        return self


class GroupedExperts(BaseModel):
    """transformers' grouped_mm MoE forward in a prefill (`estimator.model.grouped_experts`): the grouped GEMMs read
    the hit experts' weights at ``weight_efficiency`` of the bandwidth and do their FLOPs at ``flop_efficiency`` of
    the peak, one after the other; the token–expert dispatch around them (sort, gather, masks, gate, weighting,
    un-permute, sum) moves as many bytes as ``pair_hidden_passes`` passes over each routed pair's hidden width,
    ``pair_ffn_passes`` over its expert width and ``token_hidden_passes`` over each token's hidden width, at the
    profile's bandwidth, plus ``per_layer_s`` per MoE layer."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    weight_efficiency: float = Field(gt=0, le=1)
    flop_efficiency: float = Field(gt=0, le=1)
    pair_hidden_passes: Passes
    pair_ffn_passes: Passes
    token_hidden_passes: Passes
    per_layer_s: Seconds


class GemmRoofline(BaseModel):
    """One GEMM kernel's time by its shape (`estimator.model.gemms`): ``kernel_s`` (its launch, prologue and tail,
    also inside a CUDA graph's queue) plus the longer of its FLOPs at ``flop_efficiency`` of the peak and the bytes of
    its operands and output at ``bandwidth_efficiency`` of the bandwidth."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    kernel_s: Seconds
    flop_efficiency: float = Field(gt=0, le=1)
    bandwidth_efficiency: float = Field(gt=0, le=1)


class CacheWalkKernel(BaseModel):
    """One variant of the fp32 decode attention kernel over a cache (`timing.cache_attention_s`): PyTorch's
    memory-efficient SDPA kernel runs one thread block per (sequence, query head) with its one query, which walks the
    cache key by key; the variant is the first whose ``max_head_dim`` holds the head dim (None: any). A layer takes
    ``fixed_s`` plus ``key_s`` a cache position, once per wave of the blocks reading distinct memory:
    ``streams_per_wave`` of them run at once (the card's SMs × the blocks an SM runs at full speed), and the further
    query heads of a KV head handed over as a view read what its first block brought into L2."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    max_head_dim: Annotated[int, Field(gt=0, le=MAX_OPS)] | None
    fixed_s: Seconds
    key_s: Seconds
    streams_per_wave: float = Field(gt=0, le=MAX_OPS)


class EfficiencyProfile(BaseModel):
    """Achievable fractions of peak, fixed per-step costs, and runtime memory of one software stack."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, allow_inf_nan=False)

    name: str
    description: str
    bandwidth_efficiency: float = Field(gt=0, le=1)
    bandwidth_efficiency_by_memory: dict[MemoryType, Annotated[float, Field(gt=0, le=1)]] = Field(default_factory=dict)
    kv_read_efficiency: float | None = Field(default=None, gt=0, le=1)  # grouped-query attention only
    matmul_flop_efficiency: float = Field(gt=0, le=1)
    # what `calibrate`'s large-GEMM probe reads (rate ÷ peak) on the card matmul_flop_efficiency was fitted on: a
    # calibration then scales matmul_flop_efficiency by its own reading ÷ this, since the probe's 8192³ GEMM runs
    # faster than the GEMMs the profile's software issues (None: the reading replaces matmul_flop_efficiency)
    matmul_reference_efficiency: float | None = Field(default=None, gt=0, le=1)
    # FP8 training's linear GEMMs (Transformer Engine): their fraction of the card's FP8 peak (None:
    # matmul_flop_efficiency, the bf16 GEMMs' fraction of the bf16 peak)
    fp8_matmul_flop_efficiency: float | None = Field(default=None, gt=0, le=1)
    attention_flop_efficiency: float = Field(gt=0, le=1)
    # attention with an explicit mask (transformers' sliding windows): a slower SDPA kernel over every causal pair
    masked_attention_flop_efficiency: float | None = Field(default=None, gt=0, le=1)
    # fp32 GEMMs run on CUDA cores (no tensor cores; TF32 off, PyTorch's default): a fraction of the card's fp32 peak
    # (None: matmul_flop_efficiency); the GEMMs of PyTorch's math SDPA kernel run in fp32 whatever the model's dtype
    fp32_matmul_flop_efficiency: float | None = Field(default=None, gt=0, le=1)
    # a prefill's GEMMs, each timed by its shape (estimator.model.gemms): 16-bit ones with 16-bit weights (gemm), fp32
    # ones and the math SDPA kernel's batched ones (fp32_gemm); None: their FLOPs at the matmul shares above
    gemm: GemmRoofline | None = None
    fp32_gemm: GemmRoofline | None = None
    # fp32 attention runs PyTorch's memory-efficient SDPA kernel on CUDA cores (flash takes no fp32), masked or not
    fp32_attention_flop_efficiency: float | None = Field(default=None, gt=0, le=1)
    elementwise_hidden_passes: float = Field(ge=0, le=MAX_PASSES)
    elementwise_ffn_passes: float = Field(ge=0, le=MAX_PASSES)
    # per model_type, the passes its forward makes, counted from a trace of the runtime's code (model.phases
    # .elementwise_elements_per_layer): (hidden, FFN) in 16-bit, then (hidden, FFN) in fp32; others: the two above
    elementwise_passes_by_family: dict[str, tuple[Passes, Passes, Passes, Passes]] = Field(default_factory=dict)
    # of those passes, the operations CUDA runs on TensorIterator's non-vectorized kernels (strided or broadcast
    # operands, casts to a wider type), per model_type: [passes, FFN passes, output elements over the hidden width,
    # over the FFN width] in 16-bit, then the same in fp32; a prefill times them at strided_elements_per_s
    # (model.phases.strided_elementwise; decode steps and training keep the bytes at the bandwidth)
    elementwise_strided_by_family: dict[str, tuple[Passes, Passes, Passes, Passes, Passes, Passes, Passes, Passes]] = \
        Field(default_factory=dict)
    strided_elements_per_s: ElementRate | None = None
    per_layer_step_s: Seconds
    host_per_layer_s: Seconds
    # host dispatch counted in aten operations (timing.host_dispatch_s): families listed here cost host_fixed_s +
    # their operations × host_per_op_s a step instead of layers × host_per_layer_s. Per model_type, the operations
    # one layer dispatches: (prefill, decode with as many KV heads as query heads, decode with grouped KV heads)
    eager_ops_per_layer: dict[str, tuple[Ops, Ops, Ops]] = Field(default_factory=dict)
    # the operations outside the layers (embedding, rotary tables, masks, final norm, head): (prefill, decode) per
    # model_type; and what one layer that runs the math SDPA kernel dispatches beyond its count above
    eager_ops_outside_layers: dict[str, tuple[Ops, Ops]] = Field(default_factory=dict)
    eager_ops_per_math_layer: Ops = 0
    host_fixed_s: Seconds = 0
    host_per_op_s: Seconds = 0
    # the host's work before a phase's first kernel (the forward's preamble), inside the host time above: no GPU work
    # overlaps it, so a GPU-bound phase takes it plus the GPU's time (timing.phase_time; families counted in ops)
    host_prologue_s: Seconds = 0
    # the host's state (timing.host_state_range): a counted operation's host cost over one bare launch on the host
    # host_per_op_s was measured on, and the bare launch's fastest and slowest state seen there
    host_op_bare_ratio: float | None = Field(default=None, gt=0, le=100)
    host_bare_op_range_s: tuple[Seconds, Seconds] | None = None
    # an fp32 decode step's SDPA over the cache (timing.cache_attention_s), its kernel variants by head dim, widest
    # last; (): the KV read at kv_read_efficiency instead
    fp32_cache_attention: tuple[CacheWalkKernel, ...] = ()
    # the decode step's attention kernel by its tiles (estimator.model.decode_attention; None: the cache read once)
    decode_attention: DecodeAttentionTiles | None = None
    # transformers' static-cache decode passes SDPA a mask, so grouped KV heads are repeated per query head first
    # (repeat_kv: several KV heads copied, one viewed; estimator.model.decode_attention): the copy kernel's rate in
    # elements written per second, [16-bit, fp32]; None: the kernel gets the KV heads as cached
    repeat_kv_elements_per_s: tuple[ElementRate, ElementRate] | None = None
    # a prefill's routed experts as transformers' grouped_mm forward runs them (None: as dense GEMMs)
    grouped_experts: GroupedExperts | None = None
    # GPU time per dispatched aten operation beyond its bytes and FLOPs (a small kernel's launch and tail, also
    # inside a CUDA graph): the counted operations × this join the per-layer cost (timing.phase_time)
    gpu_per_op_s: Seconds = 0
    cuda_context_bytes: int = Field(ge=0, le=MAX_BYTES)
    workspace_bytes: int = Field(ge=0, le=MAX_BYTES)
    driver_reserved_fraction: float = Field(ge=0, lt=0.1)
    allocator_slack_fraction: float = Field(ge=0, lt=1)
    nccl_buffer_bytes: int = Field(ge=0, le=MAX_BYTES)
    logits_fp32_upcast: bool
    prefill_chunk_tokens: int | None = Field(default=None, gt=0, le=MAX_CHUNK_TOKENS)
    # transformers' DynamicCache keeps the whole prompt in sliding-window layers until its next update
    sliding_window_prefill_full: bool = False
    # eager PyTorch activations written as elementwise chains (gelu_new) keep extra temporaries
    eager_activation_temporaries: bool = False
    # the runtime is transformers: where its code leaves SDPA only the math kernel, scores are materialised
    math_attention_fallback: bool = False
    decompressed_mla_cache: bool = False
    allreduce_latency_s: Seconds
    interconnect_efficiency: float = Field(gt=0, le=1)
    # step FLOPs ÷ (peak × this); None: the step is timed kernel by kernel (estimator.training.step_time)
    train_flop_efficiency: float | None = Field(gt=0, le=1)
    train_fp32_flop_efficiency: float | None = Field(default=None, gt=0, le=1)  # fp32 steps; None: the above
    # eager step (estimator.training.eager_step): the backward's elementwise bytes ÷ the forward's, whose passes are
    # elementwise_hidden_passes / _ffn_passes as a prefill's. Set: the GEMMs run at train_flop_efficiency (then a
    # GEMM share, not a step share), attention at attention_flop_efficiency, the elementwise passes at the
    # bandwidth; None: train_flop_efficiency is one step-level share that lumps them
    train_backward_elementwise_ratio: float | None = Field(default=None, ge=0, le=MAX_PASSES)
    # overlap of a training step's communication with its compute (estimator.training.step_time.exposed_s): the
    # fraction of each collective's time the framework runs behind compute, at most the compute of the phase it
    # can hide behind; 0 puts it on the critical path. TP all-reduces and PP sends behind the step's compute, the
    # DP gradient reduction behind the backward of the step's last micro-batch (ZeRO-3 / FSDP: every
    # micro-batch's), ZeRO-3 / FSDP parameter all-gathers prefetched behind the forward and backward
    train_overlap_tp: float = Field(default=0, ge=0, le=1)
    train_overlap_pp: float = Field(default=0, ge=0, le=1)
    train_overlap_dp: float = Field(default=0, ge=0, le=1)
    train_overlap_gather: float = Field(default=0, ge=0, le=1)
    # host dispatch of an eager training step (estimator.training.eager_step): each phase takes the longer of its
    # GPU time and the time the host needs to issue it
    train_host_forward_s: Seconds = 0  # per step: embedding, head, loss, autograd set-up
    train_host_forward_per_layer_s: Seconds = 0
    train_host_backward_per_layer_s: Seconds = 0
    train_host_checkpointed_forward_per_layer_s: Seconds = 0
    train_host_checkpointed_backward_per_layer_s: Seconds = 0  # recompute included
    # the same counted in operations, for the families listed (estimator.training.host_ops): their operations
    # (train_ops_by_family, per model_type) × the host's cost of one in each phase; others keep the figures above
    train_ops_by_family: dict[str, TrainOps] = Field(default_factory=dict)
    train_host_forward_per_op_s: Seconds = 0
    train_host_backward_per_op_s: Seconds = 0
    train_host_checkpointed_forward_per_op_s: Seconds = 0
    train_host_checkpointed_backward_per_op_s: Seconds = 0  # recompute included
    optimizer_host_s: Seconds = 0  # per step, and per parameter tensor below
    optimizer_host_per_tensor_s: Seconds = 0
    # foreach (multi-tensor) optimizer kernels: a cost per element per kernel beside their bytes
    foreach_element_pass_s: Seconds = 0
    fitted_on: tuple[str, ...] = ()
    sources: tuple[str, ...] = Field(min_length=1)

    @field_validator("host_bare_op_range_s")
    @classmethod
    def _fastest_first(cls, states: tuple[float, float] | None) -> tuple[float, float] | None:
        if states is not None and states[0] > states[1]:
            raise ValueError(f"give the fastest state first, then the slowest: [{states[1]:g}, {states[0]:g}]")
        return states

    @field_validator("fp32_cache_attention")
    @classmethod
    def _narrowest_first(cls, kernels: tuple[CacheWalkKernel, ...]) -> tuple[CacheWalkKernel, ...]:
        widths = [k.max_head_dim for k in kernels]
        bounded = [w for w in widths if w is not None]
        if bounded != sorted(set(bounded)) or None in widths[:-1]:
            raise ValueError("give the kernel variants narrowest max_head_dim first, each once; null only last")
        return kernels

    @property
    def repeats_kv(self) -> bool:
        """Whether the runtime repeats grouped KV heads per query head before the decode's attention."""
        return self.repeat_kv_elements_per_s is not None

    @property
    def overlaps(self) -> bool:
        """Whether the profile runs any training communication behind compute."""
        return any((self.train_overlap_tp, self.train_overlap_pp, self.train_overlap_dp, self.train_overlap_gather))

    def bandwidth_fraction(self, memory_type: MemoryType) -> float:
        """Achievable fraction of peak bandwidth on this memory technology."""
        return self.bandwidth_efficiency_by_memory.get(memory_type, self.bandwidth_efficiency)
