"""Scalar-or-array arithmetic: the few operations the terms need beyond + − × / // and comparisons.

Every term in `estimator.model` is written once and evaluates on Python numbers (one estimate) or elementwise on
numpy arrays (a sweep grid). Python's operators already do both; `min`, `max`, `round`, `if` and `not` do not, so
the terms call these instead. numpy is imported only for an array argument, whose caller has imported it already
(`numpy_module`).

The annotations name the scalar case (what mypy checks); the array case is checked by tests/planning/test_sweep.py,
which compares every sweep row with `estimate` at the same point.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T", int, float)
V = TypeVar("V")


def numpy_module() -> Any:
    """numpy, for code that holds arrays (so numpy is loaded already): an import, not a look-up in `sys.modules`,
    which could find the module half-built while another thread is still loading it. Typed Any: the terms' array
    case is checked by tests, not by mypy (this module's docstring says why)."""
    import numpy

    return numpy


def _numpy(*values: object) -> Any:
    """The numpy module when any of ``values`` is an array, else None."""
    for value in values:
        if not isinstance(value, (int, float, str)):
            return numpy_module()
    return None


def is_array(value: object) -> bool:
    return _numpy(value) is not None


def minimum(a: T, b: T) -> T:
    np = _numpy(a, b)
    return min(a, b) if np is None else np.minimum(a, b)


def maximum(a: T, b: T) -> T:
    np = _numpy(a, b)
    return max(a, b) if np is None else np.maximum(a, b)


def where(condition: bool, a: V, b: V) -> V:
    """``a if condition else b``; elementwise for arrays (both sides are evaluated)."""
    np = _numpy(condition, a, b)
    return (a if condition else b) if np is None else np.where(condition, a, b)


def logical_not(condition: bool) -> bool:
    np = _numpy(condition)
    return (not condition) if np is None else np.logical_not(condition)


def any_true(condition: bool) -> bool:
    """Whether ``condition`` holds anywhere (a Python bool in both cases)."""
    np = _numpy(condition)
    return bool(condition) if np is None else bool(np.any(condition))


def round_half_even(x: float, like: int) -> int:
    """``round(x)`` (ties to even, as Python rounds) in the type of ``like``: an int, or an array of like's dtype
    (numpy's ``rint`` rounds ties to even too)."""
    np = _numpy(x, like)
    if np is None:
        return round(x)
    return np.rint(x).astype(np.asarray(like).dtype)  # type: ignore[no-any-return]


def as_float(x: int) -> int:
    """The same value in float64 (for arrays) or unchanged (for Python ints, which never overflow): evaluating a
    term on floats gives an overflow-free estimate of its size beside the exact int64 result."""
    np = _numpy(x)
    return x if np is None else x.astype(np.float64)  # type: ignore[attr-defined]


def distinct(values: Any) -> tuple[Any, Any]:
    """(sorted distinct values, index of each value among them) of an integer-valued array: a lookup table where
    the values are dense (a sweep grid's axes), else a sort (``numpy.unique``)."""
    np = numpy_module()
    values = np.asarray(values).astype(np.int64)
    low, high = int(values.min()), int(values.max())
    if high - low > 4 * len(values) + 4096:
        unique, inverse = np.unique(values, return_inverse=True)
        return unique, inverse.reshape(-1)
    present = np.zeros(high - low + 1, dtype=bool)
    present[values - low] = True
    return np.flatnonzero(present) + low, (np.cumsum(present) - 1)[values - low]


def per_distinct(fn: Callable[[int], V], values: int) -> V:
    """``fn(values)`` for a scalar; for an integer-valued array, ``fn`` called once per distinct value (for terms
    computed in exact rationals, which arrays cannot hold) and spread back over the array."""
    np = _numpy(values)
    if np is None:
        return fn(values)
    unique, inverse = distinct(values)
    return np.array([fn(v) for v in unique.tolist()])[inverse]  # type: ignore[no-any-return]
