"""Units: byte and time constants, parsing of human sizes, formatting in decimal or binary units.

Decimal prefixes (kB, MB, GB, TB = 10³ⁿ) are what datasheets and this tool's default output use; binary
prefixes (KiB, MiB, GiB = 2¹⁰ⁿ) are what nvidia-smi and PyTorch print. They are never mixed: every formatter
takes the system explicitly and its label says which.

>>> parse_count("70b")
70000000000
>>> parse_count("7.5e9")
7500000000
>>> parse_count("32k")
32000
>>> parse_tokens("32K")
32768
>>> parse_bytes("96GiB")
103079215104
>>> parse_bytes("100 GB")
100000000000
>>> format_bytes(140_000_000_000, binary=False)
'140.0 GB'
>>> format_bytes(150_754_820_096, binary=True)
'140.4 GiB'
"""

from __future__ import annotations

import math
import re

from estimator.errors import ECHO_MAX, WorkloadInvalid

KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12
KIB = 2**10
MIB = 2**20
GIB = 2**30

GIGA = 1e9
TERA = 1e12

# The largest count, however written: the capacity search (`estimator.model.capacity`) holds counts in numpy's
# int64, whose largest is 2⁶³ − 1 ≈ 9.2 × 10¹⁸; 10¹⁸ is the round bound below it. Each field's own bound (batch,
# tokens, degrees) is checked later, where its workload is built.
MAX_COUNT = 10**18
MAX_COUNT_TEXT = "1e18"
SHOWN_CHARS = ECHO_MAX  # the most of an input an error message quotes (estimator.errors)

_SUFFIX_MULTIPLIER = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
# A number's text: digits with an optional fraction (or a fraction alone), each part delimited, so that a match
# that fails is given up in linear time (``[0-9]*\.?[0-9]+`` retries every split of a run of digits: seconds for
# a few thousand). The suffix and unit are peeled off the end first, by `_peeled`, for the same reason.
_DECIMAL = r"(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"
_COUNT_NUMBER = re.compile(_DECIMAL + r"(?:e[+-]?[0-9]+)?", re.IGNORECASE)
_SIZE_NUMBER = re.compile(_DECIMAL)
_DIGITS = re.compile(r"[0-9]+")
_BYTE_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def _peeled(text: str, ending: str) -> tuple[str, str]:
    """(the text before ``ending``, the ending as written) when ``text`` ends with it (any case), else
    (``text``, "")."""
    if ending and text[-len(ending):].lower() == ending:
        return text[:-len(ending)], text[-len(ending):]
    return text, ""


def parse_bytes(text: str) -> int:
    """Parse a size with its unit into whole bytes: ``96GiB`` (binary, 2³⁰), ``100GB`` (decimal, 10⁹), ``512 MiB``.

    The unit is required (a bare ``96`` could be GB or GiB). Raises `WorkloadInvalid` for anything else, and for
    a size that is zero or rounds to no whole byte.
    """
    rest, unit = _peeled(text.strip(), "b")
    rest, binary = _peeled(rest, "i")
    prefix = next((p for p in "kmgt" if _peeled(rest, p)[1]), "")
    rest = _peeled(rest, prefix)[0].rstrip()
    if not unit or not _SIZE_NUMBER.fullmatch(rest):
        raise WorkloadInvalid(f"not a size: {shown(text)} (expected a number and a unit, e.g. 96GiB or 100GB)")
    if binary and not prefix:
        raise WorkloadInvalid(f"not a size: {shown(text)} (iB has no prefix; use B, KiB, MiB, GiB or TiB)")
    scale: int = (1024 if binary else 1000) ** _BYTE_POWER[prefix]
    value = float(rest) * scale
    if not math.isfinite(value) or round(value) <= 0:
        raise WorkloadInvalid(f"a size must be positive, got {shown(text)}")
    return round(value)


def parse_count(text: str) -> int:
    """Parse a decimal count such as ``70b``, ``13B``, ``7.5e9``, ``32k``, ``2048`` into an exact integer.

    Suffixes are decimal (k = 10³, m = 10⁶, b/g = 10⁹, t = 10¹²); ``32Ki`` is 32 × 1024 (contexts, which people
    often write so). Raises `WorkloadInvalid` for anything else, including non-integral results, and for a count
    past `MAX_COUNT` however it is written (digits, exponent or suffix: one limit, one message), checked before any
    conversion of its digits to an integer, so a text of thousands of digits is one line, not Python's conversion
    limit.
    """
    body = text.strip()
    rest, binary = _peeled(body, "ki")
    if binary:
        rest = rest.rstrip()
        if not _DIGITS.fullmatch(rest):
            raise WorkloadInvalid(f"not a count: {shown(text)} (expected e.g. 2048, 32k, 70b, 7.5e9)")
        digits = rest.lstrip("0") or "0"
        if len(digits) > len(str(MAX_COUNT)):  # past the limit by its length alone: never converted
            raise count_too_large(text)
        return checked_count(int(digits) * 1024, text)
    suffix = next((s for s in "kmbgt" if _peeled(body, s)[1]), "")
    rest = _peeled(body, suffix)[0].rstrip()
    if not _COUNT_NUMBER.fullmatch(rest):
        raise WorkloadInvalid(f"not a count: {shown(text)} (expected e.g. 2048, 32k, 70b, 7.5e9)")
    value = float(rest) * _SUFFIX_MULTIPLIER[suffix]  # a float of any length of digits: inf at worst
    if not value <= MAX_COUNT:  # also inf
        raise count_too_large(text)
    rounded = round(value)
    if abs(value - rounded) > 1e-6 * max(1.0, value):
        raise WorkloadInvalid(f"not a whole number: {shown(text)}")
    return int(rounded)


# Token counts follow vLLM's convention for its token options (max_model_len, max_num_batched_tokens): a lowercase
# suffix is decimal, an uppercase K, M or G binary, and a binary suffix takes a whole number only. Source: vLLM's
# `human_readable_int`, vllm/engine/arg_utils.py (github.com/vllm-project/vllm, commit 99d7eb5d6a51): '1k' -> 1,000,
# '1K' -> 1,024, '25.6k' -> 25,600; "Decimals are not allowed with binary suffixes".
_TOKEN_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30}


def parse_tokens(text: str) -> int:
    """Parse a token count as vLLM does: ``2k`` is 2,000, ``2K`` (and ``2Ki``) 2,048, ``1M`` 1,048,576; every other
    form as `parse_count` (``2048``, ``2.5k``, ``1e4``). A binary suffix takes a whole number (``2.5K`` is refused,
    pointing to ``2.5k``).

    >>> parse_tokens("2k"), parse_tokens("2K"), parse_tokens("32Ki"), parse_tokens("1M")
    (2000, 2048, 32768, 1048576)
    """
    body = text.strip()
    multiplier = _TOKEN_BINARY.get(body[-1:])
    if multiplier is None:
        return parse_count(text)
    rest = body[:-1].rstrip()
    if not _DIGITS.fullmatch(rest):
        if _SIZE_NUMBER.fullmatch(rest):
            raise WorkloadInvalid(f"not a count: {shown(text)} (a binary suffix {body[-1]} takes a whole number; "
                                  f"{rest}{body[-1].lower()} is decimal)")
        raise WorkloadInvalid(f"not a count: {shown(text)} (expected e.g. 2048, 2k = 2,000, 2K = 2,048)")
    digits = rest.lstrip("0") or "0"
    if len(digits) > len(str(MAX_COUNT)):  # past the limit by its length alone: never converted
        raise count_too_large(text)
    return checked_count(int(digits) * multiplier, text)


def checked_count(value: int, text: str | int) -> int:
    """``value`` itself, refused (`count_too_large`) past `MAX_COUNT`: the limit a count given as a number (the
    Python API's) meets as one given as text does."""
    if value > MAX_COUNT:
        raise count_too_large(text)
    return value


def count_too_large(text: str | int) -> WorkloadInvalid:
    """The one refusal of a count past `MAX_COUNT`, whatever its suffix or form."""
    return WorkloadInvalid(f"not a count: {shown(text)} (a count is at most {MAX_COUNT_TEXT})")


def shown(text: str | int) -> str:
    """An input as an error quotes it: its repr, cut to `SHOWN_CHARS` characters (a pasted file is not echoed)."""
    if isinstance(text, int):  # str() of an int past Python's 4,300-digit limit raises; say its size instead
        return str(text) if text.bit_length() <= 256 else f"a number of {text.bit_length():,} bits"
    quoted = repr(text)
    return quoted if len(quoted) <= SHOWN_CHARS else quoted[:SHOWN_CHARS - 2] + "…" + quoted[-1]


def capacity_label(capacity_bytes: int, *, binary: bool) -> str:
    """The memory table's capacity row: in decimal GB a card's usable memory reads larger than the size it is sold
    with (an 80 GB H100's 79.6 GiB are 85.5 GB), so the row names the binary figure the driver reports beside it."""
    return "usable capacity" if binary else f"usable capacity ({capacity_bytes / 2**30:,.1f} GiB)"


def format_bytes(n: int | float, *, binary: bool) -> str:
    """Format a byte count with one decimal: GB (10⁹) when ``binary`` is false, GiB (2³⁰) when true."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"] if binary else ["B", "kB", "MB", "GB", "TB"]
    base = 1024.0 if binary else 1000.0
    value = float(n)
    for unit in units:
        if abs(value) < base or unit == units[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= base
    raise AssertionError("unreachable")  # pragma: no cover


def format_seconds(seconds: float) -> str:
    """Format a duration in the unit that keeps three significant digits: µs, ms or s."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def format_rate_bytes(bytes_per_s: float) -> str:
    """Format a bandwidth in decimal GB/s, as datasheets state it."""
    return f"{bytes_per_s / GIGA:,.0f} GB/s"


def format_flops(flop_per_s: float) -> str:
    """Format a compute rate in decimal TFLOP/s."""
    return f"{flop_per_s / TERA:,.1f} TFLOP/s"
