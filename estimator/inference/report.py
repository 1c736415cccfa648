"""The Report (the product) and `estimate`, which fills it from a model, a GPU and a workload.

JSON output is ``Report.model_dump(mode="json")``; field names are a contract (procurement spreadsheets read them).
A term that cannot be computed is ``None`` with a warning saying why — never silently zero.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from estimator.inference.engine_vllm import VllmStartup
from estimator.notes import Note
from estimator.report import EstimateReport, Frozen


class WorkloadInfo(Frozen):
    mode: Literal["inference"] = "inference"
    batch: int
    prompt_tokens: int
    output_tokens: int
    dtype: str
    kv_dtype: str
    gpus: int
    logits: str
    profile: str
    mla_cache: str | None
    expert_parallel: int | None = None  # --ep: GPUs each MoE layer's routed experts are dealt out over (None: none)
    attention_groups: int | None = None  # expert parallel: groups of the tensor-parallel GPUs, each its batch share


class WeightPart(Frozen):
    """Weights of one kind of tensor and the format they are stored in (e.g. attention at 4.156 bits)."""

    role: str
    params: int
    bits_per_weight: float
    bytes: int


class StatePart(Frozen):
    """Fixed per-sequence state of one kind of recurrent layer (Mamba-2, gated DeltaNet)."""

    kind: str
    layers: int
    bytes_per_sequence: int  # all these layers, one sequence, whole model
    bytes: int  # on one GPU, for the batch


class KvPart(Frozen):
    """KV cache of the layers sharing one attention window."""

    window: int | None
    layers: int
    tokens: int
    bytes: int  # on one GPU (the KV heads it holds)
    total_bytes: int  # on all GPUs of the tensor-parallel group (``bytes`` × GPUs, replicated KV heads included)


class MemoryReport(Frozen):
    weights_bytes: int
    kv_cache_bytes: int | None
    activation_bytes: int | None
    overhead_bytes: int
    total_bytes: int
    per_gpu_bytes: int
    # one GPU's share of each term above (the totals are these × GPUs; weights: this rank's shard, norms replicated)
    weights_per_gpu_bytes: int
    kv_cache_per_gpu_bytes: int | None
    activation_per_gpu_bytes: int | None
    overhead_per_gpu_bytes: int
    capacity_bytes: int
    gpus_required: int | None
    fits: bool
    headroom_bytes: int
    max_batch: int | None  # largest batch that fits at this prompt + output on these GPUs (0: none fits)
    max_context_tokens: int | None  # longest prompt + output that fits at this batch, output fixed (0: none),
    # capped at the model's max_position_embeddings; the figure memory alone allows is the field below
    kv_cache_per_token_bytes: int | None
    weights_by_role: tuple[WeightPart, ...]
    kv_by_window: tuple[KvPart, ...]
    # recurrent layers' fixed state (a hybrid's Mamba / DeltaNet layers), counted in per_gpu_bytes beside the KV cache
    state_bytes: int = 0
    state_per_gpu_bytes: int = 0
    state_by_kind: tuple[StatePart, ...] = ()
    max_context_tokens_by_memory: int | None = None  # max_context_tokens before the model's position limit
    # weights held more than once over the GPUs, beyond weights_bytes (the model's one copy): replicated norms,
    # biases and routers on every further GPU, and each shard rounded up to whole bytes. So that total_bytes =
    # weights_bytes + weights_replicated_bytes + kv_cache_bytes + activation_bytes + overhead_bytes + state_bytes
    weights_replicated_bytes: int = 0
    # expert parallel (--ep): whole routed experts one GPU holds of each MoE layer, and their bytes (in
    # weights_per_gpu_bytes); None without expert parallel
    experts_per_gpu: int | None = None
    expert_weights_per_gpu_bytes: int | None = None


class TimeReport(Frozen):
    prefill_s: float
    prefill_bound_s: float
    prefill_bound: str
    decode_step_s: float | None
    decode_step_bound_s: float | None
    bound: str | None
    time_to_first_token_s: float
    tokens_per_s: float | None
    tokens_per_s_bound: float | None  # the most any implementation could decode (peak bandwidth / FLOP/s)
    tokens_per_s_per_sequence: float | None
    prefill_flops: float
    prefill_bytes: float
    decode_bytes: float | None
    decode_flops: float | None
    communication_s: float = Field(description=(
        "Seconds of tensor-parallel all-reduces (2 of the activations per layer, ring over the link the group "
        "crosses) in the prefill plus one decode step at the full context, and under expert parallel the MoE "
        "layers' all-to-all (all_to_all_s): already inside prefill_s and decode_step_s, not added to them; 0 on "
        "one GPU."))
    experts_read_per_layer: float | None = None  # MoE: expected distinct experts one decode step reads
    # where each phase sits on the roofline: FLOPs per byte moved, and FLOP/s one GPU executes at the expected time
    prefill_flop_per_byte: float
    prefill_flop_per_s_per_gpu: float
    decode_flop_per_byte: float | None
    decode_flop_per_s_per_gpu: float | None
    # the layout does not fit in memory: every time and rate above is what it would take if it did (marked, not
    # nulled, so the fields keep their types and a user sizing a larger card still reads the figures)
    hypothetical: bool = False
    all_to_all_s: float | None = Field(default=None, description=(
        "Expert parallel (--ep beyond --gpus): seconds of every MoE layer's dispatch and combine all-to-all over "
        "the link the EP group crosses, in the prefill plus one decode step; inside communication_s, prefill_s "
        "and decode_step_s. None without expert parallel; 0 at --ep = --gpus (the all-reduce sums the experts)."))


class Report(EstimateReport[WorkloadInfo, MemoryReport, TimeReport, Note]):
    # the frame's fields holding inference's parts; no docstring, which the JSON schema would print as a description
    # --engine: the figures that engine prints at start-up and whether it starts (None: no engine asked)
    engine: VllmStartup | None = None
