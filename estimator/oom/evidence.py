"""Gather the evidence of a failed job from the inputs given: text (message, summary, nvidia-smi, in any order and
any number of files) and at most one snapshot pickle, told apart by pickle's first byte (protocol 2+: 0x80)."""

from __future__ import annotations

from collections.abc import Sequence

from estimator.errors import WorkloadInvalid
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
    if evidence.message is None and (snapshot is None or snapshot.oom_request_bytes is None):
        raise WorkloadInvalid("found no out-of-memory message ('CUDA out of memory. Tried to allocate …') nor a "
                              "snapshot with a failed request in the input")
    return evidence
