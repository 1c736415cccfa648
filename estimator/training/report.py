"""The TrainingReport: the product of ``estimate --mode train`` (JSON = ``model_dump(mode="json")``).

Every memory term is bytes on ONE GPU (the busiest pipeline stage); ``total_bytes`` sums over all GPUs of the run.
Transient terms (autocast copies, loss gradients, optimizer temporaries) are counted in the phase where they
peak; ``peak_phase`` says which phase sets ``per_gpu_bytes``.
"""

from __future__ import annotations

from typing import Literal

from estimator.notes import Note
from estimator.report import EstimateReport, Frozen

PeakPhase = Literal["forward-backward", "recompute", "optimizer-step"]


class TrainingWorkloadInfo(Frozen):
    mode: Literal["train"] = "train"
    batch: int
    seq_len: int
    grad_accum: int
    tokens_per_step: int
    precision: str
    optimizer: str
    recompute: str
    attention: str
    zero: int
    fsdp: str | None
    dp: int
    tp: int
    pp: int
    virtual_stages: int = 1  # interleaved 1F1B: model chunks per pipeline GPU (1: plain 1F1B)
    cp: int = 1  # context parallel: ranks each sequence is split over
    ep: int = 1  # expert parallel: data-parallel ranks each MoE layer's routed experts are dealt out over
    pipeline_layers: tuple[int, ...] = ()  # layers of each pipeline stage, first to last (training.pipeline)
    gpus: int
    sequence_parallel: bool
    lora_rank: int | None
    lora_targets: tuple[str, ...] | None
    qlora: str | None
    profile: str


class ActivationPart(Frozen):
    """One saved tensor of a layer (per GPU, all micro-batches in flight), for --explain and the breakdown."""

    name: str
    bytes_per_token: float
    bytes: int


class PhaseTerm(Frozen):
    """One term held during a phase: a TrainingMemoryReport field's name and its bytes in that phase (the
    recompute phase holds the activations less the output layer's)."""

    term: str
    bytes: int


class PhaseMemory(Frozen):
    """The tensors one phase of a step holds on one GPU, term by term; ``tensor_bytes`` is their sum, and the
    largest phase's sum is ``peak_tensor_bytes``."""

    phase: PeakPhase
    terms: tuple[PhaseTerm, ...]
    tensor_bytes: int


class TrainingMemoryReport(Frozen):
    weights_bytes: int
    gradient_bytes: int
    master_weights_bytes: int
    optimizer_bytes: int
    model_states_bytes: int
    trainable_params: int
    autocast_copy_bytes: int
    gathered_params_bytes: int
    fp8_weight_bytes: int = 0  # FP8 training: Transformer Engine's FP8 copy of every linear weight
    ddp_bucket_bytes: int
    activation_bytes: int
    activation_per_layer_bytes: int
    in_flight_micro_batches: int
    output_layer_bytes: int
    loss_backward_bytes: int
    # the logits at the loss in the forward, beside its saved log-softmax: a term of the forward-backward phase where
    # the forward's end sets it (autocast with full recompute: estimator.training.step_phases)
    loss_forward_bytes: int = 0
    recompute_bytes: int
    optimizer_step_bytes: int
    peak_phase: PeakPhase
    peak_tensor_bytes: int
    overhead_bytes: int
    per_gpu_bytes: int
    total_bytes: int
    capacity_bytes: int
    fits: bool
    headroom_bytes: int
    layer_tensors: tuple[ActivationPart, ...]
    max_batch: int  # the largest micro-batch that fits at this sequence length (0: not one sequence)
    max_seq_len: int  # the longest sequence that fits at this micro-batch, capped at the model's own limit
    max_seq_len_by_memory: int  # the same, memory alone (past the model's limit where it is)
    phases: tuple[PhaseMemory, ...]  # forward-backward, recompute (full recomputation only), optimizer-step


class TrainingTimeReport(Frozen):
    step_s: float
    step_bound_s: float
    compute_s: float
    optimizer_s: float
    communication_s: float
    tp_communication_s: float  # the parts of communication_s (pp: only on a --system)
    pp_communication_s: float
    dp_communication_s: float
    cp_communication_s: float = 0.0  # context parallel: ring attention's K/V (forward) and K/V + dK/dV (backward)
    ep_communication_s: float = 0.0  # expert parallel: the MoE layers' dispatch and combine all-to-all
    # of communication_s, what the step waits for: the rest runs behind compute as the profile's train_overlap_*
    # fractions say (step_s = compute_s + optimizer_s + exposed_communication_s)
    exposed_communication_s: float
    bubble_s: float  # of compute_s, the pipeline idling
    pipeline_bubble_fraction: float
    tokens_per_s: float
    mfu: float
    model_flops_per_step: float
    executed_flops_per_gpu: float
    hypothetical: bool = False  # the run does not fit in memory: every time above is what it would take if it did


class TrainingReport(EstimateReport[TrainingWorkloadInfo, TrainingMemoryReport, TrainingTimeReport, Note]):
    # the frame's fields holding training's parts; no docstring, which the JSON schema would print as a description
    pass
