"""What a device can report, and the one-line refusal of every other figure a failed job's output claims.

A size is a ``size_t`` wherever the figures come from: CUDA's ``cudaMemGetInfo(size_t *free, size_t *total)``,
the caching allocator's block and segment sizes (c10/cuda/CUDACachingAllocator.h) and NVML's ``nvmlMemory_t``
(unsigned long long). So no size is negative, none exceeds 2⁶⁴ − 1 bytes, and none is fractional or non-finite
once scaled to bytes. What the card holds (free, in use, allocated, reserved) is at most its capacity; only the
failed request may exceed it (asking for more than the card has is a real out-of-memory error).
"""

from __future__ import annotations

import math

from estimator.errors import WorkloadInvalid, echoed

SIZE_MAX = 2**64 - 1  # size_t: every size CUDA, PyTorch's allocator and NVML report
DEVICE_MAX = 2**31 - 1  # a CUDA device ordinal is an int (cudaSetDevice(int))
PID_MAX = 2**31 - 1  # pid_t is a 32-bit int
COUNT_MAX = 2**63 - 1  # the allocator's counters (OOMs, cudaMalloc retries) are int64_t


def checked_bytes(value: float, what: str, shown: str, error: type[Exception] = WorkloadInvalid) -> int:
    """``value`` (bytes) as an int, or ``error`` naming ``what`` when no device could report it."""
    if isinstance(value, float) and not math.isfinite(value):
        raise error(f"{what} {echoed(shown)} is not a finite size")
    if value < 0:
        raise error(f"{what} {echoed(shown)} is negative; a device reports no negative size")
    if value > SIZE_MAX:
        raise error(f"{what} {echoed(shown)} is over 2**64 - 1 bytes, more than any device can report")
    return round(value)


def checked_count(digits: str, what: str, most: int) -> int:
    """A whole number read from text (a device index, a process id, a counter), at most ``most``."""
    if len(digits) > len(str(most)) or int(digits) > most:
        raise WorkloadInvalid(f"{what} {echoed(digits)} is over {most:,}, more than a device or system reports")
    return int(digits)


def at_most(bytes_: int, slack: int, bound: int, bound_slack: int, what: str, of: str,
            error: type[Exception] = WorkloadInvalid) -> None:
    """Refuse ``what`` (``bytes_`` ± ``slack``, as displayed) when it is surely more than ``of`` (``bound`` ±
    ``bound_slack``): the display rounding of both is allowed for, so a true figure is never refused."""
    if bytes_ - slack > bound + bound_slack:
        raise error(f"{what} ({bytes_:,} bytes) is more than {of} ({bound:,} bytes); no device reports that")
