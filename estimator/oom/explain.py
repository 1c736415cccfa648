"""Reconcile what a failed job said with the estimate of its workload, and rank what to change.

The card: capacity (as CUDA reports it), free, allocated by PyTorch, reserved by PyTorch but in no tensor, and what
the process holds outside PyTorch (CUDA context, library workspaces, NCCL). The failed request: the tensor of the
job whose allocation has its size (`tensors`), and in which term of the estimate it sits. The changes: each
re-estimated by the caller (the CLI re-runs ``estimate`` with the change applied), ranked so that those which make
the job fit come first, then by cost (none < time < quality < hardware), then by the memory they free.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from estimator.errors import WorkloadInvalid
from estimator.notes import Note, NoteCode, note
from estimator.oom.parse import Size
from estimator.oom.report import Card, Evidence, OomReport, Prediction, Suggestion, TensorMatch, TermLine
from estimator.oom.tensors import Tensor, allocation_bytes
from estimator.report import Fix

EXPANDABLE = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
COST_ORDER = {"none": 0, "time": 1, "quality": 2, "hardware": 3}
# Innermost frames of the failed allocation (snapshot) that say which part of the job it was.
FRAME_HINTS = (("_multi_tensor_adam", "optimizer step"), ("/optim/", "optimizer step"),
               ("cross_entropy", "output layer and loss"), ("loss_utils", "output layer and loss"))


def _b(size: Size | None) -> int | None:
    return None if size is None else size.bytes


def reconcile(evidence: Evidence) -> Card:
    """The card at the failure from whatever evidence there is; the snapshot's exact figures win over text."""
    m, s, smi, snap = evidence.message, evidence.summary, evidence.nvidia_smi, evidence.snapshot
    requested = (snap.oom_request_bytes if snap and snap.oom_request_bytes else None) or _b(m.requested if m else None)
    if requested is None:
        raise WorkloadInvalid("no out-of-memory message ('Tried to allocate …') and no snapshot with a failed "
                              "request in the input; paste the torch.OutOfMemoryError text")
    # the message is written at the failure; a snapshot or summary taken in an except block comes after the
    # failed operation freed its partial outputs
    allocated = _b(m.allocated if m else None)
    reserved = None
    if m is not None and m.allocated is not None and m.reserved_unallocated is not None:
        reserved = m.allocated.bytes + m.reserved_unallocated.bytes
    if allocated is None or reserved is None:
        allocated = snap.allocated_bytes if snap else _b(s.allocated if s else None)
        reserved = snap.reserved_bytes if snap else _b(s.reserved if s else None)
    unallocated = None if reserved is None or allocated is None else reserved - allocated
    in_use = _b(m.process_in_use) if m else None
    outside = None if in_use is None or reserved is None else max(0, in_use - reserved)
    others = sum(size.bytes for _, size in m.other_processes) if m and m.other_processes else None
    free = (snap.oom_device_free_bytes if snap and snap.oom_device_free_bytes is not None else None) \
        or _b(m.free if m else None)
    if free is None and smi is not None:
        free = smi.total.bytes - smi.used.bytes
    largest = snap.largest_free_block_bytes if snap else None
    return Card(requested_bytes=requested, capacity_bytes=_b(m.capacity) if m else (smi.total.bytes if smi else None),
                free_bytes=free, allocated_bytes=allocated, reserved_unallocated_bytes=unallocated,
                outside_pytorch_bytes=outside, other_processes_bytes=others, largest_free_block_bytes=largest,
                fragmented=unallocated is not None and unallocated >= requested)


def match_request(card: Card, evidence: Evidence, tensors: Sequence[Tensor]) -> list[TensorMatch]:
    """The job's tensors whose allocation is the failed request's size, most likely first.

    Exact when a snapshot gives the request; else within the message's display rounding. Among equal sizes, one
    whose term the snapshot's frames name comes first, then the order of ``tensors``.
    """
    snap, msg = evidence.snapshot, evidence.message
    exact = snap is not None and snap.oom_request_bytes is not None
    slack = 0 if exact or msg is None else msg.requested.resolution_bytes
    frames = " ".join(f"{f.filename} {f.name}" for f in snap.oom_frames[:12]) if snap else ""
    hinted = {term for key, term in FRAME_HINTS if key in frames}
    found = []
    for t in tensors:
        alloc = allocation_bytes(t.bytes)
        if abs(alloc - card.requested_bytes) <= slack:
            how = "snapshot: the failed request's exact size" if exact else "the message's size, to its two decimals"
            if t.term in hinted:
                how += f"; its frames are in {t.term}"
            found.append((t.term not in hinted, TensorMatch(name=t.name, term=t.term, tensor_bytes=t.bytes,
                                                            allocation_bytes=alloc, arithmetic=t.arithmetic,
                                                            evidence=how)))
    found.sort(key=lambda pair: pair[0])
    return [m for _, m in found]


def fits_after(card: Card, prediction: Prediction | None, per_gpu: int) -> bool:
    """Whether ``per_gpu`` (an estimate with a change applied) fits beside what the estimate does not cover.

    When the workload's own estimate fits yet the card ran out, the difference is measured: PyTorch tensors beyond
    the estimate's (held by the program), other processes, and the cache's unusable free space (fragmentation).
    """
    capacity = prediction.capacity_bytes if prediction else (card.capacity_bytes or 0)
    held = 0
    if prediction is not None and prediction.fits:
        held += max(0, (card.allocated_bytes or 0) + card.requested_bytes - prediction.tensor_bytes)
        held += (card.reserved_unallocated_bytes or 0) if card.fragmented else 0
    return per_gpu + held + (card.other_processes_bytes or 0) <= capacity


def allocator_suggestion(card: Card, prediction: Prediction | None) -> Suggestion | None:
    """``expandable_segments``: lets the allocator return the free parts of partly used segments and grow one
    mapping instead (PyTorch docs, CUDA memory management). It frees the reserved-but-unallocated memory."""
    unallocated = card.reserved_unallocated_bytes
    if not unallocated:
        return None
    fits = card.fragmented if prediction is None else (card.fragmented and prediction.fits)
    return Suggestion(change=f"set {EXPANDABLE} before the job starts", frees_bytes=unallocated, per_gpu_bytes=None,
                      fits=fits, cost="none", cost_detail="allocator setting; no change to the job", time_factor=None,
                      source="measured")


F = TypeVar("F", bound=Fix)


def rank(suggestions: Sequence[F]) -> tuple[F, ...]:
    """Changes that fit first, then by cost, then by time factor, then by memory freed (largest first)."""
    return tuple(sorted(suggestions, key=lambda s: (not s.fits, COST_ORDER[s.cost],
                                                    s.time_factor if s.time_factor is not None else 1.0,
                                                    -(s.frees_bytes or 0))))


def findings(card: Card, prediction: Prediction | None, likely: TensorMatch | None) -> list[Note]:
    """What the evidence says, one note each (worded with the user's units by the renderer)."""
    out = [note(NoteCode.OOM_REQUEST, requested_bytes=card.requested_bytes, free_bytes=card.free_bytes)]
    if card.capacity_bytes is not None and prediction is not None:
        out.append(note(NoteCode.OOM_DRIVER_RESERVED, reported_bytes=card.capacity_bytes,
                        capacity_bytes=prediction.capacity_bytes))
    if card.outside_pytorch_bytes is not None:
        out.append(note(NoteCode.OOM_OUTSIDE_PYTORCH, bytes=card.outside_pytorch_bytes))
    if card.other_processes_bytes:
        out.append(note(NoteCode.OOM_OTHER_PROCESSES, bytes=card.other_processes_bytes))
    if card.reserved_unallocated_bytes is not None and card.allocated_bytes is not None:
        out.append(note(NoteCode.OOM_CACHE, allocated_bytes=card.allocated_bytes,
                        unallocated_bytes=card.reserved_unallocated_bytes, fragmented=card.fragmented,
                        largest_free_bytes=card.largest_free_block_bytes))
    if likely is not None:
        out.append(note(NoteCode.OOM_TENSOR, name=likely.name, term=likely.term, arithmetic=likely.arithmetic,
                        tensor_bytes=likely.tensor_bytes, evidence=likely.evidence))
    elif prediction is not None:
        out.append(note(NoteCode.OOM_NO_TENSOR))
    if prediction is not None:
        out += _prediction_findings(card, prediction)
    return out


def _prediction_findings(card: Card, p: Prediction) -> list[Note]:
    top = max(p.terms, key=lambda t: t.bytes) if p.terms else TermLine(name="none", bytes=0)
    out = [note(NoteCode.OOM_ESTIMATE, per_gpu_bytes=p.per_gpu_bytes, capacity_bytes=p.capacity_bytes, fits=p.fits,
                largest_term=top.name, largest_term_bytes=top.bytes)]
    at_failure = (card.allocated_bytes or 0) + card.requested_bytes
    if p.fits and card.allocated_bytes is not None and at_failure > p.tensor_bytes:
        out.append(note(NoteCode.OOM_BEYOND_ESTIMATE, allocated_bytes=card.allocated_bytes,
                        requested_bytes=card.requested_bytes, beyond_bytes=at_failure - p.tensor_bytes))
    return out


def explain(evidence: Evidence, *, prediction: Prediction | None = None, tensors: Sequence[Tensor] = (),
            suggestions: Sequence[Suggestion] = ()) -> OomReport:
    """The OomReport: measured card, the likely tensor, the estimate's view and the ranked changes."""
    card = reconcile(evidence)
    matches = match_request(card, evidence, tensors)
    likely = matches[0] if matches else None
    ranked = list(suggestions)
    allocator = allocator_suggestion(card, prediction)
    if allocator is not None:
        ranked.append(allocator)
    return OomReport(evidence=evidence, card=card, likely_tensor=likely, other_matches=tuple(matches[1:]),
                     prediction=prediction, findings=tuple(findings(card, prediction, likely)),
                     suggestions=rank(ranked))
