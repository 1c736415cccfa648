"""render/float_text.py writes the bytes ``repr`` writes, for every double, the hard cases included."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

np = pytest.importorskip("numpy")

from estimator.render import float_text  # noqa: E402
from estimator.render.float_text import float_reprs  # noqa: E402


def _texts(values: object) -> list[str]:
    return [bytes(row[row != 0]).decode("ascii") for row in float_reprs(np, np.asarray(values, dtype=np.float64))]


def _assert_repr(values: object) -> None:
    array = np.asarray(values, dtype=np.float64)
    expected = [repr(v) for v in array.tolist()]
    got = _texts(array)
    wrong = [(e, g) for e, g in zip(expected, got, strict=True) if e != g]
    assert wrong == []


def _decided_by_numpy(values: object) -> int:
    """How many entries the vectorised path decides (the rest go to repr one by one)."""
    array = np.asarray(values, dtype=np.float64)
    seen: list[int] = []
    original = float_text._by_repr

    def counting(np_: object, values_: object, rows: object, matrix: object) -> None:
        seen.append(int(np.count_nonzero(rows)))
        original(np_, values_, rows, matrix)

    float_text._by_repr = counting  # type: ignore[assignment]
    try:
        float_reprs(np, array)
    finally:
        float_text._by_repr = original
    return len(array) - sum(seen)


def test_the_forms_repr_writes() -> None:
    # positional from 1e-4 up to below 1e16, "d.ddde±XX" outside; whole numbers keep ".0", "1e-05" has no point
    assert _texts([0.0, -0.0, 1.0, 0.1, 1.5, -2.25, 1e-4, 1e-5, 1.25e-7, 9999999999999998.0, 1e16, 1.5e16,
                   123456789012345678.0, 1e22, 1e100, 1.7976931348623157e308, 5e-324, 2.5e-310]) == [
        "0.0", "-0.0", "1.0", "0.1", "1.5", "-2.25", "0.0001", "1e-05", "1.25e-07", "9999999999999998.0",
        "1e+16", "1.5e+16", "1.2345678901234568e+17", "1e+22", "1e+100", "1.7976931348623157e+308", "5e-324",
        "2.5e-310"]


def test_non_finite_values() -> None:
    assert _texts([math.inf, -math.inf, math.nan]) == ["inf", "-inf", "nan"]


def test_random_doubles_of_every_size() -> None:
    rng = np.random.default_rng(10)
    mantissas = rng.random(20_000) + 0.5
    _assert_repr(mantissas * 10.0 ** rng.integers(-12, 24, len(mantissas)))
    _assert_repr(-rng.random(20_000) * 1000)


def test_doubles_from_random_bits() -> None:
    # every bit pattern is a double: subnormals, huge and tiny exponents, all mantissas
    bits = np.random.default_rng(11).integers(0, 2**63, 20_000, dtype=np.int64)
    values = bits.view(np.float64)
    _assert_repr(values[np.isfinite(values)])


def test_short_decimals_and_whole_numbers() -> None:
    rng = np.random.default_rng(12)
    _assert_repr(rng.integers(0, 10**6, 10_000) / 10.0 ** rng.integers(0, 8, 10_000))  # 0.25, 12.5, 0.001234
    _assert_repr(rng.integers(0, 2**62, 10_000).astype(np.float64))  # whole, 1e16..1e18 worked in integers
    _assert_repr(rng.integers(0, 10**17, 10_000).astype(np.float64) * 10.0 ** rng.integers(0, 5, 10_000))


def test_neighbours_of_powers_of_ten_and_two() -> None:
    powers = np.concatenate([10.0 ** np.arange(-20, 30), 2.0 ** np.arange(-60, 70)])
    near = [np.nextafter(powers, 0), powers, np.nextafter(powers, np.inf)]
    _assert_repr(np.concatenate([*near, np.nextafter(near[0], 0), np.nextafter(near[2], np.inf)]))


def test_halfway_cases() -> None:
    # decimals that sit exactly between two doubles' reading intervals, or between two shortest decimals
    halves = [struct.unpack("<d", struct.pack("<q", k))[0] for k in range(4607182418800017408, 4607182418800017408
                                                                           + 2000)]
    _assert_repr(halves)
    _assert_repr([5e-324 * k for k in range(1, 200)] + [0.5 + k * 2.0**-53 for k in range(-500, 500)])


def test_ties_between_two_shortest_decimals() -> None:
    # x + k/8 near 10^15 and whole numbers ending in 5 near 10^16..10^17 sit half way between two decimals of
    # the shortest length: repr keeps the even last digit
    quarters = 1e15 + np.arange(0, 4000) / 8
    fives = np.float64(2.0**56) + 5 * np.arange(0, 4000) * 16
    _assert_repr(np.concatenate([quarters, 1804906045299822.0 + np.arange(0, 4000) / 4, fives,
                                 np.float64(1e17) + 2**7 * np.arange(4000)]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(allow_nan=False), min_size=1, max_size=40))
def test_any_double(values: list[float]) -> None:
    _assert_repr(values)


def test_numpy_decides_nearly_every_entry() -> None:
    # the speed rests on it: repr one by one only where an exact test could not decide
    rng = np.random.default_rng(13)
    values = (rng.random(50_000) * 9 + 1) * 10.0 ** rng.integers(-6, 18, 50_000)  # 1e-6 up (below: repr)
    assert _decided_by_numpy(values) >= 49_900
