"""Read what a failed PyTorch job printed: the ``torch.OutOfMemoryError`` message, ``torch.cuda.memory_summary()``
and ``nvidia-smi``. One text may hold any of them, pasted one after another; each reader finds its own part.

Sizes in PyTorch's text are rounded for display: the message writes two decimals of B, KiB, MiB or GiB
(``format_size`` in c10/cuda/CUDACachingAllocator.cpp), the summary whole MiB (or KiB/GiB), nvidia-smi whole MiB.
Each parsed size keeps the half-unit it may be off by, so matching against exact tensor sizes stays honest.
"""

from __future__ import annotations

import re

from estimator.errors import WorkloadInvalid, echoed
from estimator.oom.bounds import COUNT_MAX, DEVICE_MAX, PID_MAX, at_most, checked_bytes, checked_count
from estimator.report import Frozen

_UNITS = {"b": 1, "bytes": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
# A number starts where no digit or dot precedes it: a search then scans a long run of digits once, not once from
# each of its digits (which took seconds on a few thousand).
_SIZE = r"(?<![\d.])([\d.]+)\s*(bytes|B|KiB|MiB|GiB|TiB)"


class Size(Frozen):
    """A size read from text: ``bytes`` as printed, within ± ``resolution_bytes`` of the true value."""

    bytes: int
    resolution_bytes: int


def _size(number: str, unit: str, what: str) -> Size:
    """The size ``number unit`` as PyTorch or nvidia-smi printed it; refused (naming ``what``) unless it is a
    number a device can report (`bounds`)."""
    scale = _UNITS[unit.lower()]
    shown = f"{number} {unit}"
    if number.count(".") > 1 or not number.strip("."):
        raise WorkloadInvalid(f"{what} {echoed(shown)!r} is not a number")
    decimals = len(number.split(".")[1]) if "." in number else 0
    value = checked_bytes(float(number) * scale, what, shown)
    return Size(bytes=value, resolution_bytes=scale // (2 * 10 ** min(decimals, 30)) if scale > 1 else 0)


def _within(size: Size | None, bound: Size | None, what: str, of: str) -> None:
    """Refuse ``size`` when, display rounding allowed for, it is more than ``bound``."""
    if size is not None and bound is not None:
        at_most(size.bytes, size.resolution_bytes, bound.bytes, bound.resolution_bytes, what, of)


class OomMessage(Frozen):
    """The fields of one ``CUDA out of memory`` message (PyTorch ≥ 2.1 wording; the older one-line form too)."""

    requested: Size
    device: int | None
    capacity: Size | None
    free: Size | None
    process_in_use: Size | None  # "Including non-PyTorch memory, this process has … in use"
    other_processes: tuple[tuple[int, Size], ...]  # "Process N has … memory in use" (NVML, when it can see them)
    allocated: Size | None  # "Of the allocated memory … is allocated by PyTorch"
    reserved_unallocated: Size | None  # "… is reserved by PyTorch but unallocated"
    text: str


def _find(pattern: str, text: str) -> re.Match[str] | None:
    return re.search(pattern, text, flags=re.IGNORECASE | re.DOTALL)


def parse_message(text: str) -> OomMessage | None:
    """The first out-of-memory message in ``text``, or None when there is none; refused with one line when it
    claims a figure no device reports (`bounds`)."""
    head = _find(r"Tried to allocate " + _SIZE, text)
    if head is None:
        return None
    start = text.rfind("\n", 0, head.start()) + 1
    body = text[start:]
    end = body.find("\n\n")
    body = body if end < 0 else body[:end]

    def size(pattern: str, what: str) -> Size | None:
        found = _find(pattern, body)
        return None if found is None else _size(found.group(1), found.group(2), f"the message's {what}")

    device = _find(r"GPU (\d+)", body)
    others = tuple((checked_count(m.group(1), "the message's process id", PID_MAX),
                    _size(m.group(2), m.group(3), f"the message's process {echoed(m.group(1))} memory"))
                   for m in re.finditer(r"Process (\d+) has " + _SIZE + " memory in use", body))
    reserved_total = size(_SIZE + r" reserved in total by PyTorch", "reserved in total")  # PyTorch < 2.1
    allocated = size(r"Of the allocated memory " + _SIZE, "allocated") or size(_SIZE + r" already allocated",
                                                                                "allocated")
    unallocated = size(r"and " + _SIZE + r" is reserved by PyTorch but unallocated", "reserved but unallocated")
    if unallocated is None and reserved_total is not None and allocated is not None:
        _within(allocated, reserved_total, "the message's allocated size", "its reserved in total")
        unallocated = Size(bytes=max(0, reserved_total.bytes - allocated.bytes),
                           resolution_bytes=reserved_total.resolution_bytes + allocated.resolution_bytes)
    message = OomMessage(
        requested=_size(head.group(1), head.group(2), "the message's requested size"),
        device=None if device is None else checked_count(device.group(1), "the message's GPU index", DEVICE_MAX),
        capacity=size(r"total capacity of " + _SIZE, "total capacity") or size(_SIZE + r" total capacity",
                                                                                "total capacity"),
        free=size(r"of which " + _SIZE + r" is free", "free size") or size(_SIZE + r" free", "free size"),
        process_in_use=size(r"this process has " + _SIZE + r" memory in use", "process memory in use"),
        other_processes=others,
        allocated=allocated,
        reserved_unallocated=unallocated,
        text=" ".join(body.split()),
    )
    _check_message(message)
    return message


def _check_message(m: OomMessage) -> None:
    """What the card holds is at most its capacity (the request alone may exceed it)."""
    of = "the card's total capacity"
    for what, held in (("free size", m.free), ("process memory in use", m.process_in_use),
                       ("allocated size", m.allocated), ("reserved but unallocated size", m.reserved_unallocated),
                       *((f"process {pid} memory", used) for pid, used in m.other_processes)):
        _within(held, m.capacity, f"the message's {what}", of)
    if m.allocated is not None and m.reserved_unallocated is not None:
        reserved = Size(bytes=m.allocated.bytes + m.reserved_unallocated.bytes,
                        resolution_bytes=m.allocated.resolution_bytes + m.reserved_unallocated.resolution_bytes)
        _within(reserved, m.capacity, "the message's reserved size (allocated and unallocated)", of)


class MemorySummary(Frozen):
    """Rows of ``torch.cuda.memory_summary()`` (all pools), current and peak."""

    allocated: Size
    allocated_peak: Size
    reserved: Size
    reserved_peak: Size
    non_releasable: Size | None
    ooms: int | None
    cudamalloc_retries: int | None


def _summary_row(text: str, label: str) -> tuple[Size, Size] | None:
    found = re.search(r"\|\s*" + label + r"\s*\|\s*" + _SIZE + r"\s*\|\s*" + _SIZE, text)
    if found is None:
        return None
    what = f"the summary's {label.lower()}"
    return _size(found.group(1), found.group(2), what), _size(found.group(3), found.group(4), f"{what} peak")


def parse_summary(text: str) -> MemorySummary | None:
    """The memory summary in ``text``, or None when there is none; refused with one line when it claims more
    allocated (or non-releasable) than reserved: the allocator hands out only what it reserved."""
    allocated = _summary_row(text, "Allocated memory")
    reserved = _summary_row(text, "GPU reserved memory")
    if allocated is None or reserved is None:
        return None
    non_releasable = _summary_row(text, "Non-releasable memory")
    _within(allocated[0], reserved[0], "the summary's allocated memory", "its reserved memory")
    _within(allocated[1], reserved[1], "the summary's allocated memory peak", "its reserved memory peak")
    _within(non_releasable[0] if non_releasable else None, reserved[0], "the summary's non-releasable memory",
            "its reserved memory")
    ooms = re.search(r"CUDA OOMs:\s*(\d+)", text)
    retries = re.search(r"cudaMalloc retries:\s*(\d+)", text)
    return MemorySummary(allocated=allocated[0], allocated_peak=allocated[1], reserved=reserved[0],
                         reserved_peak=reserved[1],
                         non_releasable=None if non_releasable is None else non_releasable[0],
                         ooms=None if ooms is None else checked_count(ooms.group(1), "the summary's CUDA OOMs",
                                                                      COUNT_MAX),
                         cudamalloc_retries=None if retries is None else checked_count(
                             retries.group(1), "the summary's cudaMalloc retries", COUNT_MAX))


class SmiProcess(Frozen):
    pid: int
    name: str
    used: Size | None  # None where nvidia-smi truncated the column ("14309...") or could not read it


class SmiReading(Frozen):
    """The first GPU's memory line of ``nvidia-smi`` and its process table."""

    used: Size
    total: Size
    processes: tuple[SmiProcess, ...]


def parse_nvidia_smi(text: str) -> SmiReading | None:
    """The ``nvidia-smi`` table in ``text``, or None when there is none."""
    line = re.search(r"(?<!\d)(\d+)\s*MiB\s*/\s*(\d+)\s*MiB", text)
    if line is None or "NVIDIA-SMI" not in text.upper():
        return None
    processes = []
    table = text[text.find("Processes:"):] if "Processes:" in text else ""
    for row in re.finditer(r"^\|\s*\d+\s+\S+\s+\S+\s+(\d+)\s+\S+\s+(\S+)\s+(\S+)\s*\|", table, flags=re.MULTILINE):
        used = re.fullmatch(r"(\d+)MiB", row.group(3))
        pid = checked_count(row.group(1), "nvidia-smi's process id", PID_MAX)
        held = None if used is None else _size(used.group(1), "MiB", f"nvidia-smi's process {pid} memory")
        processes.append(SmiProcess(pid=pid, name=row.group(2), used=held))
    total = _size(line.group(2), "MiB", "nvidia-smi's total memory")
    reading = SmiReading(used=_size(line.group(1), "MiB", "nvidia-smi's used memory"), total=total,
                         processes=tuple(processes))
    for what, held in (("used memory", reading.used), *((f"process {p.pid} memory", p.used) for p in processes)):
        _within(held, total, f"nvidia-smi's {what}", "its total memory")
    return reading
