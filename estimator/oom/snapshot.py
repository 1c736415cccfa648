"""Read a memory snapshot written by ``torch.cuda.memory._dump_snapshot`` without executing anything.

A snapshot is a pickle, and unpickling can call any function the file names. The reader here resolves no name at
all (`find_class` and `persistent_load` refuse), so only what pickle builds by itself gets through: dicts, lists,
tuples, sets, strings, bytes, numbers, booleans and None — all a snapshot holds. Anything else is refused with one
line and nothing in the file runs. The snapshot's layout (``segments`` with ``blocks``, ``device_traces`` with
``action``/``size``/``frames``) is PyTorch's, documented in torch/cuda/memory.py ``_snapshot``.
"""

from __future__ import annotations

import contextlib
import io
import math
import pickle
import sys
from collections.abc import Iterator
from typing import Any

from estimator.errors import SpecInvalid, echoed
from estimator.oom.bounds import at_most, checked_bytes
from estimator.report import Frozen

LINE_MAX = 2**31 - 1  # a frame's line number: an int in PyTorch's C++ traceback (a frame past it is no frame)
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
        with _quiet_interpreter():
            return _PlainUnpickler(io.BytesIO(data)).load()
    except SnapshotRefused:
        raise
    except MemoryError:  # a length field that asks for more than the machine has
        raise SnapshotRefused("not a readable snapshot pickle: it asks for more memory than there is") from None
    except Exception as error:  # truncated or corrupt: pickle raises many kinds
        raise SnapshotRefused(f"not a readable snapshot pickle: {type(error).__name__}: {error}") from None


@contextlib.contextmanager
def _quiet_interpreter() -> Iterator[None]:
    """While a damaged pickle loads, what the interpreter itself would print to stderr is dropped: a MemoryError
    inside the C unpickler can leave a buffer it frees printing "SystemError: deallocated bytearray object has
    exported buffers" through sys.excepthook — a second line beside the one error the user gets."""
    hooks = sys.excepthook, sys.unraisablehook
    sys.excepthook = lambda *_: None
    sys.unraisablehook = lambda _: None
    try:
        yield
    finally:
        sys.excepthook, sys.unraisablehook = hooks


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


def _items(value: Any) -> list[Any] | tuple[Any, ...]:
    """``value`` where the snapshot's layout has a list, else nothing (a crafted file may put anything there)."""
    return value if isinstance(value, list | tuple) else ()


def _frames(entry: dict[str, Any]) -> tuple[Frame, ...]:
    out = []
    for f in _items(entry.get("frames")):
        if isinstance(f, dict) and isinstance(f.get("line"), int) and 0 <= f["line"] <= LINE_MAX:
            out.append(Frame(filename=str(f.get("filename", "")), line=f["line"], name=str(f.get("name", ""))))
    return tuple(out)


def _shown(value: Any) -> str:
    """``value`` as a message repeats it: its repr, cut to the echo limit, except an integer past any size (2**64),
    which is named by its length (Python refuses to write one of over 4,300 digits as text)."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"(a {value.bit_length():,}-bit integer)"
    return echoed(repr(value))


def _bytes(holder: dict[str, Any], key: str, what: str) -> int:
    """``holder[key]`` (0 when absent) as a byte count: an int a device can report (`bounds`), else refused."""
    value = holder.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SnapshotRefused(f"the snapshot's {what} is {_shown(value)}, not a byte count")
    if isinstance(value, float) and math.isfinite(value) and not value.is_integer():
        raise SnapshotRefused(f"the snapshot's {what} is {_shown(value)}, not a whole number of bytes")
    return checked_bytes(value, f"the snapshot's {what}", _shown(value), SnapshotRefused)


def _once(items: Any, seen: set[int], what: str) -> list[Any] | tuple[Any, ...]:
    """``items`` (`_items`), each container in it met for the first time: PyTorch writes every segment, block and
    trace entry as an object of its own, so one met again is a crafted file whose few bytes name the same object
    many times (3,000 references to a segment of 3,000 block references, 24 kB, took 12 s of CPU); refused, so
    the work stays proportional to the file's size."""
    found = _items(items)
    for item in (found, *(entry for entry in found if isinstance(entry, dict))):  # a list entry is met when walked
        if len(item) > 0:
            if id(item) in seen:
                named = f"{what} list" if item is found else what
                raise SnapshotRefused(f"refused: the snapshot names one {named} more than once, as no snapshot "
                                      "PyTorch writes does")
            seen.add(id(item))
    return found


def _segment_sizes(segments: list[dict[str, Any]], seen: set[int]) -> tuple[int, int, list[int]]:
    """Reserved and allocated bytes over all segments, and the free blocks' sizes; refused when a segment claims
    more allocated, or a block larger, than the segment itself."""
    reserved = allocated = 0
    free_blocks = []
    for index, segment in enumerate(_once(segments, seen, "segment")):
        if not isinstance(segment, dict):
            continue
        total = _bytes(segment, "total_size", f"segment {index} total_size")
        used = _bytes(segment, "allocated_size", f"segment {index} allocated_size")
        at_most(used, 0, total, 0, f"the snapshot's segment {index} allocated_size", "its total_size",
                SnapshotRefused)
        for block in _once(segment.get("blocks"), seen, "block"):
            if isinstance(block, dict) and block.get("state") == "inactive":
                size = _bytes(block, "size", f"segment {index} free block size")
                at_most(size, 0, total, 0, f"the snapshot's segment {index} free block", "its total_size",
                        SnapshotRefused)
                free_blocks.append(size)
        reserved, allocated = reserved + total, allocated + used
    return reserved, allocated, free_blocks


def snapshot_facts(data: bytes) -> SnapshotFacts:
    """Segments, free blocks and the failed request of one device's snapshot; a size no device reports (negative,
    fractional, non-finite, over 2**64 - 1 bytes, or more than its segment) is refused with one line."""
    snap = load_plain(data)
    if not isinstance(snap, dict) or not isinstance(snap.get("segments"), list):
        raise SnapshotRefused("not a memory snapshot: no 'segments' list (write one with "
                              "torch.cuda.memory._dump_snapshot)")
    seen: set[int] = set()  # the containers met so far (`_once`)
    reserved, allocated, free_blocks = _segment_sizes(snap["segments"], seen)
    oom = None
    for trace in _once(snap.get("device_traces"), seen, "trace"):
        for entry in _once(trace, seen, "trace entry"):
            if isinstance(entry, dict) and entry.get("action") == "oom":
                oom = entry
    settings = snap.get("allocator_settings")
    expandable = settings.get("expandable_segments") if isinstance(settings, dict) else None
    return SnapshotFacts(
        segments=sum(isinstance(s, dict) for s in snap["segments"]),
        reserved_bytes=reserved,
        allocated_bytes=allocated,
        largest_free_block_bytes=max(free_blocks, default=0),
        expandable_segments=bool(expandable) if expandable is not None else None,
        oom_request_bytes=None if oom is None else _bytes(oom, "size", "failed request size"),
        oom_device_free_bytes=None if oom is None or "device_free" not in oom else _bytes(
            oom, "device_free", "device_free at the failure"),
        oom_frames=() if oom is None else _frames(oom),
    )
