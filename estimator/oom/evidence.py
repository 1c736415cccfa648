"""Gather the evidence of a failed job from the inputs given: text (message, summary, nvidia-smi, in any order and
any number of files) and at most one snapshot pickle, told apart by pickle's first byte (protocol 2+: 0x80)."""

from __future__ import annotations

from collections.abc import Sequence

from estimator.errors import WorkloadInvalid
from estimator.oom.bounds import at_most
from estimator.oom.parse import parse_message, parse_nvidia_smi, parse_summary
from estimator.oom.report import Evidence
from estimator.oom.snapshot import SnapshotFacts, snapshot_facts

PICKLE_PROTO = 0x80


def gather(inputs: Sequence[tuple[str, bytes]]) -> Evidence:
    """Evidence from ``(name, content)`` pairs; a name is only for messages."""
    texts: list[str] = []
    snapshot: SnapshotFacts | None = None
    for name, data in inputs:
        if data[:1] == bytes([PICKLE_PROTO]):
            if snapshot is not None:
                raise WorkloadInvalid(f"{name}: one snapshot at a time (a second one was given)")
            snapshot = snapshot_facts(data)
            continue
        try:
            texts.append(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise WorkloadInvalid(f"{name}: neither text nor a snapshot pickle") from None
    text = "\n\n".join(texts)
    evidence = Evidence(message=parse_message(text), summary=parse_summary(text), nvidia_smi=parse_nvidia_smi(text),
                        snapshot=snapshot)
    _within_capacity(evidence)
    if evidence.message is None and (snapshot is None or snapshot.oom_request_bytes is None):
        raise WorkloadInvalid("found no out-of-memory message ('CUDA out of memory. Tried to allocate …') nor a "
                              "snapshot with a failed request in the input")
    return evidence


def _within_capacity(evidence: Evidence) -> None:
    """Refuse a summary or snapshot figure of what the card held beyond the card's capacity (the message's, or
    nvidia-smi's total, the larger: the driver's reservation is in the latter), display rounding allowed for."""
    m, smi = evidence.message, evidence.nvidia_smi
    bounds = [size for size in (m.capacity if m else None, smi.total if smi else None) if size is not None]
    if not bounds:
        return
    bound = max(bounds, key=lambda size: size.bytes)
    of = "the card's total capacity"
    if evidence.summary is not None:
        for what, size in (("allocated memory", evidence.summary.allocated),
                           ("reserved memory", evidence.summary.reserved),
                           ("reserved memory peak", evidence.summary.reserved_peak)):
            at_most(size.bytes, size.resolution_bytes, bound.bytes, bound.resolution_bytes, f"the summary's {what}",
                    of)
    snap = evidence.snapshot
    if snap is not None:
        for what, held in (("reserved bytes", snap.reserved_bytes), ("device_free at the failure",
                                                                     snap.oom_device_free_bytes)):
            if held is not None:
                at_most(held, 0, bound.bytes, bound.resolution_bytes, f"the snapshot's {what}", of)
