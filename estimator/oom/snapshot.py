"""Read a memory snapshot written by ``torch.cuda.memory._dump_snapshot`` without executing anything.

A snapshot is a pickle, and unpickling can call any function the file names. The reader here resolves no name at
all (`find_class` and `persistent_load` refuse), so only what pickle builds by itself gets through: dicts, lists,
tuples, sets, strings, bytes, numbers, booleans and None — all a snapshot holds. Anything else is refused with one
line and nothing in the file runs. The snapshot's layout (``segments`` with ``blocks``, ``device_traces`` with
``action``/``size``/``frames``) is PyTorch's, documented in torch/cuda/memory.py ``_snapshot``.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

from estimator.errors import SpecInvalid
from estimator.report import Frozen

MAX_SNAPSHOT_BYTES = 1 << 30  # a snapshot of a busy card with long history is tens of MB; refuse what is absurd


class SnapshotRefused(SpecInvalid):
    """A snapshot file that holds something other than plain containers and numbers, or is no snapshot."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise SnapshotRefused(f"refused: the snapshot names {module}.{name}; only plain containers and numbers are "
                              "read from a snapshot (nothing was executed)")

    def persistent_load(self, pid: Any) -> Any:
        raise SnapshotRefused("refused: the snapshot holds a persistent reference; only plain containers and numbers "
                              "are read from a snapshot (nothing was executed)")


def load_plain(data: bytes) -> Any:
    """Unpickle ``data`` admitting only what pickle builds without naming a class or function."""
    if len(data) > MAX_SNAPSHOT_BYTES:
        raise SnapshotRefused(f"refused: the snapshot is {len(data):,} bytes, over {MAX_SNAPSHOT_BYTES:,}")
    try:
        return _PlainUnpickler(io.BytesIO(data)).load()
    except SnapshotRefused:
        raise
    except Exception as error:  # truncated or corrupt: pickle raises many kinds
        raise SnapshotRefused(f"not a readable snapshot pickle: {type(error).__name__}: {error}") from None


class Frame(Frozen):
    filename: str
    line: int
    name: str


class SnapshotFacts(Frozen):
    """What a snapshot says about the card at the failure."""

    segments: int
    reserved_bytes: int
    allocated_bytes: int
    largest_free_block_bytes: int  # the largest request the allocator could serve without a new cudaMalloc
    expandable_segments: bool | None
    oom_request_bytes: int | None  # the size the allocator asked for at the last 'oom' trace entry
    oom_device_free_bytes: int | None
    oom_frames: tuple[Frame, ...]  # innermost first


def _frames(entry: dict[str, Any]) -> tuple[Frame, ...]:
    out = []
    for f in entry.get("frames") or ():
        if isinstance(f, dict) and isinstance(f.get("line"), int):
            out.append(Frame(filename=str(f.get("filename", "")), line=f["line"], name=str(f.get("name", ""))))
    return tuple(out)


def snapshot_facts(data: bytes) -> SnapshotFacts:
    """Segments, free blocks and the failed request of one device's snapshot."""
    snap = load_plain(data)
    if not isinstance(snap, dict) or not isinstance(snap.get("segments"), list):
        raise SnapshotRefused("not a memory snapshot: no 'segments' list (write one with "
                              "torch.cuda.memory._dump_snapshot)")
    segments = [s for s in snap["segments"] if isinstance(s, dict)]
    free_blocks = [b.get("size", 0) for s in segments for b in s.get("blocks") or ()
                   if isinstance(b, dict) and b.get("state") == "inactive"]
    oom = None
    for trace in snap.get("device_traces") or ():
        for entry in trace or ():
            if isinstance(entry, dict) and entry.get("action") == "oom":
                oom = entry
    settings = snap.get("allocator_settings")
    expandable = settings.get("expandable_segments") if isinstance(settings, dict) else None
    return SnapshotFacts(
        segments=len(segments),
        reserved_bytes=sum(int(s.get("total_size", 0)) for s in segments),
        allocated_bytes=sum(int(s.get("allocated_size", 0)) for s in segments),
        largest_free_block_bytes=max((int(b) for b in free_blocks), default=0),
        expandable_segments=bool(expandable) if expandable is not None else None,
        oom_request_bytes=None if oom is None else int(oom.get("size", 0)),
        oom_device_free_bytes=None if oom is None or "device_free" not in oom else int(oom["device_free"]),
        oom_frames=() if oom is None else _frames(oom),
    )
