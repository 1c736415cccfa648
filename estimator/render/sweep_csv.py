"""The sweep's CSV, written a column at a time: the same bytes as ``csv.DictWriter`` writes for ``result.rows()``.

A million rows through the csv module cost a Python call per field (~60 fields a row). Here numbers are formatted
as whole numpy columns, 32,768 rows at a time (integers digit by digit; floats as Python's ``repr``, as csv writes
them, computed in numpy by render/float_text.py, once per run of equal values); every field is a byte matrix, a
row per point, NUL-padded; a few thousand rows at a time the fields are laid side by side, the NULs dropped and
each long constant field (assumptions, weights by role), which stands in as one marker byte, pasted in by
``bytes.replace``. The bytes go straight to the file's buffer. Text is quoted exactly as csv quotes it
(``QUOTE_MINIMAL``, ``lineterminator="\\n"``): tests/render/test_sweep_csv.py compares the bytes.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from estimator.render.float_text import float_reprs

if TYPE_CHECKING:
    from estimator.planning.sweep import SweepBlock, SweepResult

_CHUNK_ROWS = 32768  # rows formatted at once: numpy's per-call cost spread over many rows
_LAY_OUT_ROWS = 2048  # rows laid out at once: buffers of about a MB, reused by the allocator
_LONG = 48  # constant fields longer than this stand in the byte matrix as one marker byte
_MARKERS = tuple(chr(c) for c in range(2, 9))  # csv text here never holds a control byte


def csv_field(value: Any) -> str:
    """``value`` as csv writes it in a row of several fields (None → empty, floats by repr, text quoted if needed)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([value, ""])
    return buffer.getvalue()[:-2]


def write_sweep_csv(result: SweepResult, handle: TextIO) -> None:
    """Header and every row of ``result``, as ``csv.DictWriter(handle, result.keys, lineterminator="\\n")``."""
    import numpy as np

    handle.write(",".join(csv_field(k) for k in result.keys) + "\n")
    write = _byte_writer(handle)
    for block in result.blocks:
        for start in range(0, block.size, _CHUNK_ROWS):
            stop = min(start + _CHUNK_ROWS, block.size)
            fields, long = _fields(np, block, start, stop)
            for low in range(0, stop - start, _LAY_OUT_ROWS):
                write(_lay_out(np, fields, long, low, min(low + _LAY_OUT_ROWS, stop - start)))


def _byte_writer(handle: TextIO) -> Callable[[bytes], Any]:
    """Write UTF-8 bytes to ``handle``: straight to its binary buffer where it has one that takes UTF-8 and ends
    lines with "\\n" untranslated (then no text is decoded and encoded again), else as text."""
    buffer = getattr(handle, "buffer", None)
    encoding = getattr(handle, "encoding", None)
    if buffer is not None and encoding and codecs.lookup(encoding).name == "utf-8" and os.linesep == "\n":
        handle.flush()
        return buffer.write  # type: ignore[no-any-return]
    return lambda data: handle.write(data.decode("utf-8"))


def _fields(np: Any, block: SweepBlock, start: int, stop: int) -> tuple[list[Any], list[bytes]]:
    """Rows start..stop of ``block``, every field a byte matrix (a row per point, or one row for a constant),
    commas and the line end included; a long constant stands in as one marker byte: (fields, the constants)."""
    n = stop - start
    formatted: dict[tuple[Any, ...], Any] = {}
    comma = _constant(np, ",", n)
    fields: list[Any] = []
    long: list[bytes] = []
    for key in block.keys:
        if fields:
            fields.append(comma)
        if key in block.constants:
            text = csv_field(block.constants[key]).encode("utf-8")
            if len(text) > _LONG and len(long) < len(_MARKERS):
                fields.append(_constant(np, _MARKERS[len(long)], n))
                long.append(text)
            else:
                fields.append(_constant(np, text.decode("utf-8"), n))
        elif key in block.columns:  # a column that is another's array (time to first token) is formatted once
            values = block.columns[key][start:stop]
            same = (values.__array_interface__["data"][0], values.strides, values.dtype.str, np.ma.is_masked(values))
            fields.append(formatted[same] if same in formatted else formatted.setdefault(same, _column(np, values)))
        elif key in block.joined:
            fields += _joined(np, block.joined[key], start, stop)
        else:
            fields.append(_lazy(np, block, key, start, stop))
    fields.append(_constant(np, "\n", n))
    return _merge_constants(np, fields), long


def _merge_constants(np: Any, fields: list[Any]) -> list[Any]:
    """Adjacent constant fields (one row each: commas, texts) joined into one: fewer, wider copies per row."""
    merged: list[Any] = []
    for field in fields:
        if merged and len(field) == 1 and len(merged[-1]) == 1:
            merged[-1] = np.concatenate([merged[-1], field], axis=1)
        else:
            merged.append(field)
    return merged


def _lay_out(np: Any, fields: Sequence[Any], long: Sequence[bytes], low: int, high: int) -> bytes:
    """Rows low..high of ``fields`` side by side, the NUL padding dropped and the markers replaced: CSV bytes."""
    n = high - low
    matrix = np.concatenate([np.broadcast_to(f, (n, f.shape[1])) if len(f) == 1 else f[low:high] for f in fields],
                            axis=1)
    text: bytes = matrix.tobytes().translate(None, b"\0")  # NULs dropped: one C pass, ~15 % under a mask
    for marker, literal in zip(_MARKERS, long, strict=False):
        if _unsafe(literal):
            raise ValueError("sweep text holds a NUL or a marker byte")  # never: estimate's texts are plain
        text = text.replace(marker.encode("ascii"), literal)
    return text


def _lazy(np: Any, block: SweepBlock, key: str, start: int, stop: int) -> Any:
    """A text column built per point (once per group of equal points where the block says which are equal)."""
    groups = block.lazy_groups.get(key)
    if groups is None:
        return _texts(np, [block.lazy[key](i) for i in range(start, stop)], np.arange(stop - start))
    _, first, index = np.unique(groups[start:stop], return_index=True, return_inverse=True)
    return _texts(np, [block.lazy[key](start + i) for i in first.tolist()], index.reshape(-1))


# Every per-row field is a byte matrix, one row per point, its text padded with NUL bytes (which CSV text never
# holds): fields side by side, the NULs dropped, give the rows' bytes.


def _joined(np: Any, parts: Sequence[Any], start: int, stop: int) -> list[Any]:
    """A text of literal parts and integer columns (JSON, so it holds quotes): quoted as csv quotes it."""
    n = stop - start
    out = [_constant(np, '"', n)]
    for part in parts:  # integers hold no quote to double
        out.append(_constant(np, part.replace('"', '""'), n) if isinstance(part, str) else
                   _integers(np, np.asarray(part[start:stop], dtype=np.int64), np.zeros(n, dtype=bool)))
    return [*out, _constant(np, '"', n)]


def _constant(np: Any, text: str, n: int) -> Any:
    del n  # broadcast to the chunk's rows when laid out
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).reshape(1, -1)


def _column(np: Any, values: Any) -> Any:
    """A numpy column as csv would write each entry (masked: None)."""
    mask = np.ma.getmaskarray(values)
    values = np.ma.getdata(values)
    if values.dtype.kind in "iu":
        return _integers(np, values.astype(np.int64), mask)
    if values.dtype.kind == "f":
        return _floats(np, values)
    unique, index = np.unique(values, return_inverse=True)  # bool or text (bound labels): a few distinct values
    return _lookup(np, [csv_field(v) for v in unique.tolist()], index.reshape(-1))


def _integers(np: Any, values: Any, blank: Any) -> Any:
    """Decimal digits of every entry, as ``str(int)`` writes them, NUL before them; nothing where ``blank``.
    Four digits at a time from a table of "0000" … "9999" as 32-bit words, the leading zeros from a second."""
    full, leading = _quad_tables(np)
    negative = values < 0
    magnitude = np.abs(values).astype(np.uint64)  # -2^63 too: its abs wraps to itself, read unsigned
    words = max(1, (len(str(int(magnitude.max(initial=0)))) + 3) // 4)
    matrix = np.zeros((len(values), words + 1), dtype=np.uint32)
    matrix[:, 0] = (negative & ~blank) * np.uint32(ord("-") << 24)
    rest = magnitude
    for k in range(words):
        power = np.uint64(10 ** (4 * (words - 1 - k)))
        quad = (rest // power).astype(np.int64)
        rest = rest - quad.astype(np.uint64) * power
        bound = 10 ** (4 * (words - k))  # no digit before this word (below it): its zeros are leading
        ahead = np.ones(len(values), dtype=bool) if bound >= 2**64 else magnitude < np.uint64(bound)
        if k == words - 1:
            quad = np.where(ahead & (quad == 0), 10_000, quad)  # the value 0 itself: one "0"
        matrix[:, 1 + k] = np.where(ahead, leading[quad], full[np.minimum(quad, 9_999)])
    matrix[blank] = 0
    return matrix.view(np.uint8) if negative.any() else matrix[:, 1:].view(np.uint8)  # no sign: no sign word


_QUAD_TABLES: list[Any] = []


def _quad_tables(np: Any) -> tuple[Any, Any]:
    """("0000" … "9999", and the same without leading zeros, NUL instead, with "0" at 10,000) as 32-bit words."""
    if not _QUAD_TABLES:
        full = "".join(f"{k:04d}" for k in range(10_000)).encode("ascii")
        leading = b"".join(str(k).encode("ascii").rjust(4, b"\0") for k in range(1, 10_000))
        _QUAD_TABLES.append(np.frombuffer(full, dtype=np.uint32))
        _QUAD_TABLES.append(np.frombuffer(b"\0\0\0\0" + leading + b"\0\0\x000", dtype=np.uint32))
    return _QUAD_TABLES[0], _QUAD_TABLES[1]


def _floats(np: Any, values: Any) -> Any:
    """``repr`` of every entry (csv writes floats so), computed in numpy (render/float_text.py), once per run of
    equal neighbours, or once per distinct value where runs are short (a decode time at a context that several
    (prompt, output) pairs reach: values of the same bits, so -0.0 stays apart from 0.0); whole numbers below 10¹⁶
    as their digits and ".0" (as repr writes them)."""
    whole = (values == np.floor(values)) & (np.abs(values) < 1e16)
    if whole.all():
        digits = _integers(np, values.astype(np.int64), np.zeros(len(values), dtype=bool))
        return np.concatenate([digits, np.broadcast_to(_constant(np, ".0", 0), (len(values), 2))], axis=1)
    starts = np.ones(len(values), dtype=bool)
    starts[1:] = values[1:] != values[:-1]
    runs = values[starts]
    if 2 * len(runs) > len(values):  # short runs: a sort finds repeats further apart (~50 ns a value, repr ~350)
        _, first, index = np.unique(runs.view(np.int64), return_index=True, return_inverse=True)
        if 5 * len(first) < 4 * len(runs):
            matrix = float_reprs(np, runs[first])[index.reshape(-1)]
            return matrix if len(matrix) == len(values) else matrix[np.cumsum(starts) - 1]
    matrix = float_reprs(np, runs)
    return matrix if len(matrix) == len(values) else matrix[np.cumsum(starts) - 1]


def _texts(np: Any, texts: list[str], index: Any) -> Any:
    """Row i's text is ``texts[index[i]]``, quoted as csv quotes it."""
    return _lookup(np, [_quote(t) for t in texts], index)


def _quote(text: str) -> str:
    if "\r" in text:  # whether csv quotes a bare carriage return depends on the Python version: ask it
        return csv_field(text)
    return '"' + text.replace('"', '""') + '"' if ("," in text or '"' in text or "\n" in text) else text


def _lookup(np: Any, texts: list[str], index: Any) -> Any:
    """The bytes of ``texts[index[i]]`` for every row i."""
    encoded = [t.encode("utf-8") for t in texts]
    if any(_unsafe(e) for e in encoded):
        raise ValueError("sweep text holds a NUL or a marker byte")  # never: estimate's texts are plain
    table = np.array(encoded, dtype=np.bytes_)
    return table.view(np.uint8).reshape(len(encoded), -1)[index]


def _unsafe(text: bytes) -> bool:
    """Whether ``text`` holds a byte the layout uses: NUL (padding) or a marker."""
    return any(chr(c).encode("ascii") in text for c in range(9))
