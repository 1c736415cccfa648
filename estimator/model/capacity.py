"""Capacity: the largest batch and the longest context that fit, found by solving rather than scanning.

Every memory term grows monotonically with batch and with tokens (weights are constant; the KV cache, the
prefill activation peak and the allocator slack on them only grow), so "fits" is true up to some integer and
false beyond it. `largest_true` finds that integer with a doubling search and a bisection: about
2 × log2(answer) evaluations of the exact memory function, never a scan.
"""

from __future__ import annotations

from collections.abc import Callable


def largest_true(predicate: Callable[[int], bool], low: int, high: int) -> int:
    """Largest n in [low, high] with ``predicate(n)``, for a predicate that is true up to a point and false after;
    ``low - 1`` when it is false at ``low``.

    Doubling from ``low`` brackets the answer in log2(answer) steps (small answers stay cheap), then bisection
    narrows the bracket in as many again.
    """
    if low > high or not predicate(low):
        return low - 1
    good, step = low, 1
    bad = high + 1
    while good + step <= high:  # doubling: find a failing point above the last passing one
        if predicate(good + step):
            good += step
            step *= 2
        else:
            bad = good + step
            break
    while bad - good > 1:  # bisection on (good, bad): predicate(good) holds, predicate(bad) does not (or bad > high)
        mid = (good + bad) // 2
        if predicate(mid):
            good = mid
        else:
            bad = mid
    return good
