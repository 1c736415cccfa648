"""Read what a failed PyTorch job printed: the ``torch.OutOfMemoryError`` message, ``torch.cuda.memory_summary()``
and ``nvidia-smi``. One text may hold any of them, pasted one after another; each reader finds its own part.

Sizes in PyTorch's text are rounded for display: the message writes two decimals of B, KiB, MiB or GiB
(``format_size`` in c10/cuda/CUDACachingAllocator.cpp), the summary whole MiB (or KiB/GiB), nvidia-smi whole MiB.
Each parsed size keeps the half-unit it may be off by, so matching against exact tensor sizes stays honest.
"""

from __future__ import annotations

import re

from estimator.report import Frozen

_UNITS = {"b": 1, "bytes": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_SIZE = r"([\d.]+)\s*(bytes|B|KiB|MiB|GiB|TiB)"


class Size(Frozen):
    """A size read from text: ``bytes`` as printed, within ± ``resolution_bytes`` of the true value."""

    bytes: int
    resolution_bytes: int


def _size(number: str, unit: str) -> Size:
    scale = _UNITS[unit.lower()]
    decimals = len(number.split(".")[1]) if "." in number else 0
    return Size(bytes=round(float(number) * scale), resolution_bytes=scale // (2 * 10**decimals) if scale > 1 else 0)


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
    """The first out-of-memory message in ``text``, or None when there is none."""
    head = _find(r"Tried to allocate " + _SIZE, text)
    if head is None:
        return None
    start = text.rfind("\n", 0, head.start()) + 1
    body = text[start:]
    end = body.find("\n\n")
    body = body if end < 0 else body[:end]

    def size(pattern: str) -> Size | None:
        found = _find(pattern, body)
        return None if found is None else _size(found.group(1), found.group(2))

    device = _find(r"GPU (\d+)", body)
    others = tuple((int(m.group(1)), _size(m.group(2), m.group(3)))
                   for m in re.finditer(r"Process (\d+) has " + _SIZE + " memory in use", body))
    reserved_total = size(_SIZE + r" reserved in total by PyTorch")  # PyTorch < 2.1
    allocated = size(r"Of the allocated memory " + _SIZE) or size(_SIZE + r" already allocated")
    unallocated = size(r"and " + _SIZE + r" is reserved by PyTorch but unallocated")
    if unallocated is None and reserved_total is not None and allocated is not None:
        unallocated = Size(bytes=reserved_total.bytes - allocated.bytes,
                           resolution_bytes=reserved_total.resolution_bytes + allocated.resolution_bytes)
    return OomMessage(
        requested=_size(head.group(1), head.group(2)),
        device=None if device is None else int(device.group(1)),
        capacity=size(r"total capacity of " + _SIZE) or size(_SIZE + r" total capacity"),
        free=size(r"of which " + _SIZE + r" is free") or size(_SIZE + r" free"),
        process_in_use=size(r"this process has " + _SIZE + r" memory in use"),
        other_processes=others,
        allocated=allocated,
        reserved_unallocated=unallocated,
        text=" ".join(body.split()),
    )


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
    return _size(found.group(1), found.group(2)), _size(found.group(3), found.group(4))


def parse_summary(text: str) -> MemorySummary | None:
    """The memory summary in ``text``, or None when there is none."""
    allocated = _summary_row(text, "Allocated memory")
    reserved = _summary_row(text, "GPU reserved memory")
    if allocated is None or reserved is None:
        return None
    non_releasable = _summary_row(text, "Non-releasable memory")
    ooms = re.search(r"CUDA OOMs:\s*(\d+)", text)
    retries = re.search(r"cudaMalloc retries:\s*(\d+)", text)
    return MemorySummary(allocated=allocated[0], allocated_peak=allocated[1], reserved=reserved[0],
                         reserved_peak=reserved[1],
                         non_releasable=None if non_releasable is None else non_releasable[0],
                         ooms=None if ooms is None else int(ooms.group(1)),
                         cudamalloc_retries=None if retries is None else int(retries.group(1)))


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
    line = re.search(r"(\d+)\s*MiB\s*/\s*(\d+)\s*MiB", text)
    if line is None or "NVIDIA-SMI" not in text.upper():
        return None
    processes = []
    table = text[text.find("Processes:"):] if "Processes:" in text else ""
    for row in re.finditer(r"^\|\s*\d+\s+\S+\s+\S+\s+(\d+)\s+\S+\s+(\S+)\s+(\S+)\s*\|", table, flags=re.MULTILINE):
        used = re.fullmatch(r"(\d+)MiB", row.group(3))
        processes.append(SmiProcess(pid=int(row.group(1)), name=row.group(2),
                                    used=None if used is None else _size(used.group(1), "MiB")))
    return SmiReading(used=_size(line.group(1), "MiB"), total=_size(line.group(2), "MiB"), processes=tuple(processes))
