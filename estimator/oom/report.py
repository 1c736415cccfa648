"""The OomReport: the product of ``estimator oom`` (JSON = ``model_dump(mode="json")``).

Every size is bytes. Measured sizes come from PyTorch's or nvidia-smi's text (rounded for display: see
``parse.Size``) or from a snapshot (exact); predicted ones from the estimate of the workload given.
"""

from __future__ import annotations

from typing import Literal

from estimator.notes import Note
from estimator.oom.parse import MemorySummary, OomMessage, SmiReading
from estimator.oom.snapshot import SnapshotFacts
from estimator.report import Fix, Frozen, Versioned


class Evidence(Frozen):
    """What the failed job left: any of the four may be missing."""

    message: OomMessage | None
    summary: MemorySummary | None
    nvidia_smi: SmiReading | None
    snapshot: SnapshotFacts | None


class Card(Frozen):
    """Where the card's memory was at the failure (measured)."""

    requested_bytes: int  # what the failed allocation asked the driver for (a segment: see estimator.oom.tensors)
    capacity_bytes: int | None  # as CUDA reports it (the driver's own reservation is not in it)
    free_bytes: int | None
    allocated_bytes: int | None  # in live tensors
    reserved_unallocated_bytes: int | None  # cached by PyTorch's allocator, in no tensor
    outside_pytorch_bytes: int | None  # this process beyond PyTorch's pool: CUDA context, cuBLAS/NCCL workspaces
    other_processes_bytes: int | None
    largest_free_block_bytes: int | None  # from a snapshot: the largest request the cache could serve
    fragmented: bool  # the cache held at least the request, but in no block large enough


class TensorMatch(Frozen):
    """A tensor of the job whose allocation is the size the failed request was."""

    name: str
    term: str
    tensor_bytes: int
    allocation_bytes: int
    arithmetic: str
    evidence: str


class TermLine(Frozen):
    name: str
    bytes: int


class Prediction(Frozen):
    """The estimate of the workload as given (per GPU)."""

    options: str
    per_gpu_bytes: int
    capacity_bytes: int
    fits: bool
    peak_phase: str | None
    tensor_bytes: int  # per_gpu_bytes less the runtime overhead
    overhead_bytes: int
    terms: tuple[TermLine, ...]


class Suggestion(Fix):
    """One change and what it does (`estimator.report.Fix`): ``frees_bytes`` and ``per_gpu_bytes`` from the
    estimate re-run with the change applied (``source`` "estimate"), or from the measurement (``source``
    "measured": the allocator setting)."""

    frees_bytes: int
    source: Literal["estimate", "measured"]


class OomReport(Versioned):
    evidence: Evidence
    card: Card
    likely_tensor: TensorMatch | None
    other_matches: tuple[TensorMatch, ...]
    prediction: Prediction | None
    findings: tuple[Note, ...]
    suggestions: tuple[Suggestion, ...]
