"""Python's ``repr`` of a whole numpy column of floats, computed in numpy: the bytes ``repr(float(v))`` gives.

``repr`` writes the shortest decimal that reads back as the same double (CPython's ``float_repr_style`` "short",
David Gay's dtoa mode 0), positional for decimal exponents -4..15 and ``d.ddde±XX`` outside. Here, for every
entry at once:

1. ``y = |x| · 10^s`` with 10^16 < y < 10^17, exactly, as ``high + low`` (``high`` an int64, ``low`` a float in
   [-8, 8]): the product of two doubles is the rounded product plus its error, both doubles (Dekker's
   TwoProduct). Whole numbers of 10^16..10^18 are exact int64s already and are worked at the scale of 1.
2. ``half`` = half the spacing of doubles at ``x``, at the same scale: a decimal reads back as ``x`` when it lies
   nearer than ``half`` to ``y`` (ties go to the even mantissa).
3. For p significant digits the nearest p-digit decimal is ``y`` rounded to a multiple of 10^(17-p). If it reads
   back, so does the nearest decimal of every longer length, and because the interval is symmetric no other
   p-digit decimal reads back unless this one does: the shortest p whose nearest decimal reads back is what
   ``repr`` writes (the nearest of the shortest). 17 digits always read back; p = 16, 15, … are tried in turn
   on the entries still reading back.

Every step is exact integer arithmetic or a float sum whose sign or comparison the rounding cannot change, except
at exact equality, which is flagged: an entry whose answer rests on a tie or a boundary, a power of two (its
interval below is half the one above), a decimal exponent below -6 or of 18 and more, a non-finite value or a
``log10`` rounded across a power of ten goes to ``repr`` itself (once per distinct value).
tests/render/test_float_text.py compares the bytes with ``repr`` on millions of values, those cases included.
"""

from __future__ import annotations

from typing import Any

_SPLIT = 134217729.0  # 2^27 + 1: Dekker's split of a double into two 26-bit halves
_POW10 = [10**k for k in range(19)]
_ZERO = ord("0")




def float_reprs(np: Any, values: Any) -> Any:
    """``repr`` of every entry of the float64 array ``values`` as a uint8 matrix, one row per entry, with NUL
    bytes between and after the characters (the CSV writer drops them)."""
    values = np.asarray(values, dtype=np.float64)
    x = np.abs(values)
    with np.errstate(invalid="ignore"):
        whole = x == np.floor(x)
    small = whole & (x < 1e16)  # integer digits and ".0"
    big = whole & (x >= 1e16) & (x < 1e18)  # exact in int64: worked in integers at the scale of 1
    finite = np.isfinite(x) & (x > 0)
    e = np.floor(np.log10(np.where(finite, x, 1.0))).astype(np.int64)
    scaled = finite & ~whole & (e >= -6) & (e <= 15)
    power = np.asarray(10.0) ** np.where(scaled, 16 - e, 0)
    y_high, y_low = _two_product(np, np.where(scaled, x, 1.0), power)
    unsure = ~small & ~big & ~(scaled & (y_high > 1e16) & (y_high < 1e17 - 16))
    high = np.where(big, np.where(big, x, 0.0).astype(np.int64), np.where(unsure | small, 1e16 + 2, y_high)
                    .astype(np.int64))
    extra = np.where(big, np.clip(e - 16, 0, 1), 0)  # a rounded log10 is caught by the range test below
    pow10 = np.asarray(_POW10, dtype=np.int64)
    unsure |= big & ((e - 16 != extra) | ~((high >= pow10[16 + extra]) & (high < pow10[17 + extra])))
    unsure |= ~small & (np.frexp(x)[0] == 0.5)  # a power of two: the interval below is half the one above
    half = np.where(big, 1.0, power) * np.spacing(np.where(finite & (x < 1e300), x, 1.0)) * 0.5
    work = np.flatnonzero(~small & ~unsure)
    even = (values.view(np.int64) & 1) == 0  # the last bit of the mantissa
    rounded, count, undecided = _shortest(np, high[work], np.where(big, 0.0, y_low)[work], half[work],
                                          extra[work], even[work])
    unsure[work] |= undecided
    significand = np.zeros(len(x), dtype=np.int64)  # the shown digits followed by zeros: 17 digits
    significand[work] = np.where(extra[work] == 1, rounded // 10, rounded)
    digits = np.ones(len(x), dtype=np.int64)
    digits[work] = count
    exponent = e.copy()
    carry = significand == 10**17  # 9.99… rounded up to 10: one digit, the exponent one higher
    significand = np.where(carry, 10**16, significand)
    exponent += carry
    integers = np.where(small, x, 0.0).astype(np.int64)
    width = _digit_count(np, integers)
    significand = np.where(small, integers * pow10[17 - width], significand)  # x < 10^16: width ≤ 16
    digits = np.where(small, width + 1, digits)  # the fraction of a whole number is one zero
    exponent = np.where(small, width - 1, exponent)
    matrix = _layout(np, significand, digits, exponent, np.signbit(values))
    _by_repr(np, values, unsure, matrix)
    used = matrix.any(axis=0)  # most columns are NUL in every row (no sign, one exponent range): drop them
    return matrix if used.all() else matrix[:, used]


def _two_product(np: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """(a·b rounded, the rounding error): their sum is a·b exactly (Dekker 1971, no fused multiply-add)."""
    product = a * b
    a_split = _SPLIT * a
    a_high = a_split - (a_split - a)
    a_low = a - a_high
    b_split = _SPLIT * b
    b_high = b_split - (b_split - b)
    b_low = b - b_high
    error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    return product, error


def _shortest(np: Any, high: Any, low: Any, half: Any, extra: Any, even: Any) -> tuple[Any, Any, Any]:
    """(the nearest decimal with the fewest digits that reads back, at the scale of ``high``; how many digits;
    whether 17 digits failed to, which never happens)."""
    n = len(high)
    count = np.full(n, 17, dtype=np.int64)
    rounded = np.zeros(n, dtype=np.int64)
    wrong = np.zeros(n, dtype=bool)
    for shift in (0, 1):  # 17 digits (at the scale of 10^shift): always reads back, checked all the same
        rows = np.flatnonzero(extra == shift)
        rounded[rows] = _nearest_multiple(np, high[rows], low[rows], 10**shift)
        wrong[rows] = ~_reads_back(np, rounded[rows], high[rows], low[rows], half[rows], even[rows])
    active = np.arange(n)
    for digits in range(16, 0, -1):
        for shift in (0, 1):
            rows = active[extra[active] == shift]
            if not len(rows):
                continue
            candidate = _nearest_multiple(np, high[rows], low[rows], _POW10[17 + shift - digits])
            reads_back = _reads_back(np, candidate, high[rows], low[rows], half[rows], even[rows])
            passed = rows[reads_back]
            rounded[passed] = candidate[reads_back]
            count[passed] = digits
        active = active[count[active] == digits]
        if not len(active):
            break
    return rounded, count, wrong


def _nearest_multiple(np: Any, high: Any, low: Any, scale: int) -> Any:
    """The multiple of ``scale`` nearest to high + low; half way, the one with an even last digit (as dtoa)."""
    base = high // scale
    rest = high - base * scale  # 0 ≤ rest < scale; the true rest is rest + low, with low in [-8, 8]
    if scale >= 100:  # the true rest / scale lies in (-0.08, 1.08): up when 2·rest - scale + 2·low > 0
        twice = 2 * rest - scale
        near = np.abs(twice) <= 32  # only there can low (|2·low| ≤ 16) change the sign
        signed = np.where(near, twice, 0).astype(np.float64) + np.where(near, 2 * low, 0.0)  # 0 only if exactly
        up = np.where(near, np.where(signed == 0, base % 2 == 1, signed > 0), twice > 0)
        return (base + up) * scale
    # scale 1 or 10: round((rest + low) / scale) = floor((2·rest + scale + 2·low) / (2·scale)), small numbers
    z, error = _two_sum(np, (2 * rest + scale).astype(np.float64), 2 * low)  # z + error exactly
    steps = np.floor(z / (2 * scale))
    steps = steps - (steps * (2 * scale) > z) + ((steps + 1) * (2 * scale) <= z)
    on_edge = steps * (2 * scale) == z  # then the error says which side; none: half way
    steps = steps - (on_edge & ((error < 0) | ((error == 0) & ((base + steps.astype(np.int64)) % 2 == 1))))
    return (base + steps.astype(np.int64)) * scale


def _reads_back(np: Any, rounded: Any, high: Any, low: Any, half: Any, even: Any) -> Any:
    """|rounded - (high + low)| < half, or = half where the mantissa is even (a tie reads as the even one)."""
    gap = rounded - high
    near = np.abs(gap) <= 2 * half + 16  # farther can never be inside; nearer, the int64 is exact as a float
    signed, error = _two_sum(np, np.where(near, gap, 0).astype(np.float64), -low)  # the distance exactly
    distance = np.abs(signed)
    beyond = np.where(signed < 0, -error, error)  # what the rounding took off the distance
    inside = (distance < half) | ((distance == half) & ((beyond < 0) | ((beyond == 0) & even)))
    return near & inside


def _two_sum(np: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """(a + b rounded, the rounding error): their sum is a + b exactly (Knuth's TwoSum)."""
    total = a + b
    b_virtual = total - a
    error = (a - (total - b_virtual)) + (b - b_virtual)
    return total, error


def _digit_count(np: Any, values: Any) -> Any:
    count = np.ones(len(values), dtype=np.int64)
    for k in range(1, 19):
        count += values >= _POW10[k]
    return count


def _layout(np: Any, significand: Any, count: Any, exponent: Any, negative: Any) -> Any:
    """The text repr writes for ``count`` digits of ``significand`` (17 digits, the first at 10^exponent).

    Seven 64-bit words a row, read as bytes: sign and "0.000" | the first digit | four words of four digits |
    the exponent. Each digit takes two bytes, itself and what follows it (the point or NUL), so a row's point and
    hidden digits are masks on its words; every byte a row does not use is NUL."""
    n = len(significand)
    tables = _tables(np)
    scientific = (exponent < -4) | (exponent >= 16)
    words = np.empty((n, 7), dtype=np.uint64)
    zeros = np.where(~scientific & (exponent < 0), -exponent, 0)  # "0." and -exponent - 1 zeros
    words[:, 0] = tables["lead"][2 * zeros + negative]
    after = np.where(scientific, np.where(count > 1, 0, -1), np.where(exponent >= 0, exponent, -1))
    first = (_ZERO + significand // 10**16).astype(np.uint64) << np.uint64(48)
    words[:, 1] = first | ((after == 0) * np.uint64(ord(".") << 56))
    rest = significand % 10**16
    for k in range(4):
        power = 10 ** (12 - 4 * k)
        quad = rest // power
        rest -= quad * power
        local = after - 1 - 4 * k  # the point's place in this word, if there
        dot = tables["dot"][np.where((local >= 0) & (local < 4), local, 4)]
        shown = np.clip(count - 1 - 4 * k, 0, 4)
        words[:, 2 + k] = (tables["quads"][quad] & tables["shown"][shown]) | dot
    words[:, 6] = tables["exponent"][np.clip(exponent, -400, 399) + 400] * scientific
    return words.view(np.uint8)


_TABLES: dict[str, Any] = {}


def _tables(np: Any) -> dict[str, Any]:
    """Lookup words, built on the first call (the module imports without numpy)."""
    if not _TABLES:
        digits = np.frombuffer("".join(f"{k:04d}" for k in range(10_000)).encode("ascii"), dtype=np.uint8)
        _TABLES["quads"] = digits.astype(np.uint16).view(np.uint64)  # "0000" … "9999", two bytes a digit
        _TABLES["shown"] = np.array([sum(0xFF << (16 * i) for i in range(j)) | 0xFF00FF00FF00FF00 * 0
                                     for j in range(5)], dtype=np.uint64)
        _TABLES["dot"] = np.array([ord(".") << (16 * i + 8) for i in range(4)] + [0], dtype=np.uint64)
        _TABLES["lead"] = np.frombuffer(b"".join(
            sign + (b"0." + b"0" * (zeros - 1) if zeros else b"").ljust(7, b"\0")
            for zeros in range(5) for sign in (b"\0", b"-")), dtype=np.uint64).copy()
        _TABLES["exponent"] = np.frombuffer(b"".join(
            f"e{k:+03d}".encode("ascii").ljust(8, b"\0") for k in range(-400, 400)), dtype=np.uint64).copy()
    return _TABLES


def _by_repr(np: Any, values: Any, rows: Any, matrix: Any) -> None:
    """Rows the exact tests could not decide: ``repr`` itself, once per distinct value."""
    where = np.flatnonzero(rows)
    if not len(where):
        return
    distinct, index = np.unique(values[where], return_inverse=True)
    texts = [repr(v).encode("ascii") for v in distinct.tolist()]
    table = np.array(texts, dtype=np.bytes_).view(np.uint8).reshape(len(texts), -1)
    matrix[where] = 0
    matrix[where[:, None], np.arange(table.shape[1])] = table[index.reshape(-1)]
