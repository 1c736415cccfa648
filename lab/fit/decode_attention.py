"""The decode attention kernel's tiles, read from the probe of the kernel alone.

``tests/data/measured/attention/h200-2026-12-01-decode-attention.jsonl`` (``lab/measure/decode_attention.py``
on the H200, PyTorch 2.11) times SDPA with one query per sequence over a cache — the lean decode's attention — for
310 shapes, with the kernels one call launches. This script reads from its rows what the `optimized` profile's
``decode_attention`` states, and how well the rule fits:

- the tiles: every row's main kernel is cuDNN's ``sdpa_sm80_flash_fprop`` built for a head-dim width of 64, 128 or
  256 (the ``16x128x<width>`` in its name, the first width that holds the head dim), with ``16`` query rows per
  tile and a grid of KV heads × ⌈group / 16⌉ tiles by batch (``tiles``; a few 256-token rows run a 64-row kernel);
- the costs: time = t0 (+ the full-width kernel's extra fixed time) + the cache's bytes × the rule's factor /
  (bandwidth × η), least squares of the relative residual over the ``fit`` rows whose cache is at least 32 MB (so
  the fixed time is a small part), for each full-width threshold (or none), full-width efficiency (0.50–1.00 by
  0.01) and re-read fraction (0–1 by 0.05). The full-width kernel's extra fixed time is fitted so its rate is read
  apart, and left out of the profile: in the lean decode the profile's per-layer cost holds the attention kernel's
  floor.

    pip install '.[test]'                           # numpy, for the least squares
    python -m lab.fit.decode_attention          # the fit and its residuals by split
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from math import ceil
from pathlib import Path
from typing import Any

import numpy as np

from estimator.catalog.profiles import DecodeAttentionTiles
from estimator.model.decode_attention import Walk, walk

PROBE = (Path(__file__).resolve().parents[2] / "tests" / "data" / "measured" / "attention"
         / "h200-2026-12-01-decode-attention.jsonl")
PEAK_BYTES_PER_S = 4.8e12  # H200 SXM HBM3e (specs/gpus/nvidia-h200-sxm.yaml)
MIN_FIT_BYTES = 32e6
EFFICIENCIES = tuple(round(0.50 + 0.01 * i, 2) for i in range(51))
REREADS = tuple(round(0.05 * i, 2) for i in range(21))
_TILE = re.compile(r"_(\d+)x(\d+)x(\d+)_")


def rows_of(path: Path = PROBE) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def attention(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["kind"] == "attention"]


def kernel_tile(row: dict[str, Any]) -> tuple[int, int]:
    """(query rows, head-dim width) of the row's main kernel, from its name (``…_16x128x256_…``)."""
    found = _TILE.search(row["kernels"][0]["name"])
    assert found, row["kernels"][0]["name"]
    return int(found.group(1)), int(found.group(3))


def tiles(rows: list[dict[str, Any]]) -> tuple[int, tuple[int, ...]]:
    """The query rows per tile and the head-dim widths the rows' kernels show (the decode kernel, not the 64-row one
    some 256-token rows run), each checked against the row's grid: KV heads × ⌈group / rows⌉ tiles, by batch."""
    found = [(kernel_tile(r), r) for r in attention(rows)]
    for (query_rows, _), r in found:
        grid = r["kernels"][0]["grid"]
        assert grid[1] == r["kv_heads"] * ceil(r["heads"] // r["kv_heads"] / query_rows), r
        assert grid[2] == r["batch"], r
    rows_per_tile = statistics.mode(q for (q, _), _ in found)
    return rows_per_tile, tuple(sorted({width for (_, width), _ in found}))


@dataclass(frozen=True)
class Fit:
    tiles: DecodeAttentionTiles
    t0_s: float  # the narrow tiles' kernel's fixed time
    wide_extra_s: float  # what the full-width kernel's fixed time adds to it (measured, not in the profile)
    eta: float  # the narrow tiles' rate ÷ the peak
    residuals: dict[str, list[float]]  # split → relative residuals of the rows at least MIN_FIT_BYTES


def _walk(row: dict[str, Any], spec: DecodeAttentionTiles) -> Walk:
    return walk(row["heads"] // row["kv_heads"], row["head_dim"], spec)


def _design(rows: list[dict[str, Any]], spec: DecodeAttentionTiles, apart: bool = True) -> np.ndarray:
    """time = t0 (narrow) or t0 + extra (full width; ``apart`` False: none) + the rule's bytes / (peak × η)."""
    out = []
    for r in rows:
        found = _walk(r, spec)
        out.append([1.0, float(found.full_width and apart), r["kv_bytes"] * found.factor / PEAK_BYTES_PER_S])
    return np.array(out)


def _lsq(rows: list[dict[str, Any]], spec: DecodeAttentionTiles, apart: bool = True) -> tuple[np.ndarray, np.ndarray]:
    x, y = _design(rows, spec, apart), np.array([r["time"]["median_s"] for r in rows])
    coef, *_ = np.linalg.lstsq(x / y[:, None], np.ones(len(y)), rcond=None)
    return coef, (x @ coef - y) / y


def judged(rows: list[dict[str, Any]], query_rows: int) -> list[dict[str, Any]]:
    """The rows the rule describes: the tiled decode kernel's, caches of at least MIN_FIT_BYTES."""
    return [r for r in attention(rows) if kernel_tile(r)[0] == query_rows and r["kv_bytes"] >= MIN_FIT_BYTES]


def fit(rows: list[dict[str, Any]], apart: bool = True) -> Fit:
    """The rule's figures from the `fit` rows. ``apart`` (the shipped fit) gives the full-width kernel a fixed time of
    its own; without it (the first fit, set before seed 7 was measured) one fixed time serves every kernel."""
    query_rows, widths = tiles(rows)
    fitting = [r for r in judged(rows, query_rows) if r["split"] == "fit"]
    best: tuple[float, DecodeAttentionTiles] | None = None
    for full_from in (*widths, None):
        for eff in EFFICIENCIES:
            for reread in REREADS:
                spec = DecodeAttentionTiles(query_rows=query_rows, head_dims=widths, full_width_from=full_from,
                                            full_width_efficiency=eff, reread_fraction=reread)
                sse = float(np.sum(_lsq(fitting, spec, apart)[1] ** 2))
                if best is None or sse < best[0]:
                    best = (sse, spec)
    assert best is not None
    coef, _ = _lsq(fitting, best[1], apart)
    spec = best[1]
    residuals: dict[str, list[float]] = {}
    for r in judged(rows, query_rows):
        x = float(_design([r], spec, apart)[0] @ coef)
        residuals.setdefault(r["split"], []).append((x - r["time"]["median_s"]) / r["time"]["median_s"])
    return Fit(spec, float(coef[0]), float(coef[1]), float(1 / coef[2]), residuals)


WAVES = PROBE.with_name("h200-2026-12-02-waves.jsonl")  # wave-shapes.json's 40 shapes, measured after the rule below
SMS = 132  # the H200's SMs (the probe's kind=device row)
RESIDENT = {64: 4, 128: 2, 256: 2}  # blocks an SM holds by tile width: the kernels' shared memory (45,376 or 86,336 B)


def splits(bh: int, context: int, budget: int) -> int:
    """The splits of the context cuDNN's decode kernel launches per (sequence, KV head, tile) — ``bh`` of them: none
    below 1,024 tokens or where 2 × bh passes the SMs, else the largest power of two up to 64 and context / 128 that
    keeps bh × splits under ``budget`` blocks (read off the seed-7 probe's grids; 2 × SMs gives all 331 of them)."""
    if context < 1024 or 2 * bh > SMS:
        return 1
    count = 1
    while count * 2 <= min(64, context // 128) and bh * count * 2 < budget:
        count *= 2
    return count


def blocks(row: dict[str, Any], spec: DecodeAttentionTiles, budget: int = 2 * SMS) -> tuple[int, int]:
    """(thread blocks the rule gives the row's kernel, its tile width); the full-width tile runs two per split."""
    found = _walk(row, spec)
    bh = row["kv_heads"] * found.tiles * row["batch"]
    return splits(bh, row["context"], budget) * bh * (2 if found.full_width else 1), found.tile_head_dim


def wave_factor(count: int, width: int) -> float:
    """The rule fixed before the wave rows were measured: full waves of SMs × resident blocks at the bandwidth, a last
    partial wave as long as max(its blocks, SMs) would take, each block reading at most 1 / SMs of the bandwidth."""
    slots = SMS * RESIDENT[width]
    full, rest = divmod(count, slots)
    return (full * slots + (max(rest, SMS) if rest else 0)) / count


def wave_check(spec: DecodeAttentionTiles, found: Fit) -> list[tuple[dict[str, Any], int, float, float]]:
    """Each wave row: (row, the rule's block count, the error without the wave factor, the error with it), its time
    as the shipped fit's: t0 (+ the full-width kernel's extra) + the rule's bytes / (peak × η)."""
    out = []
    for r in rows_of(WAVES):
        if r["kind"] != "attention":
            continue
        count, width = blocks(r, spec)
        walked = _walk(r, spec)
        fixed = found.t0_s + (found.wide_extra_s if walked.full_width else 0.0)
        read = r["kv_bytes"] * walked.factor / (PEAK_BYTES_PER_S * found.eta)
        y = r["time"]["median_s"]
        out.append((r, count, (fixed + read - y) / y, (fixed + read * wave_factor(count, width) - y) / y))
    return out


def main() -> None:
    rows = rows_of()
    found = fit(rows)
    spec = found.tiles
    print(f"tiles: {spec.query_rows} query rows, head-dim widths {list(spec.head_dims)}; full width from "
          f"{spec.full_width_from} at {spec.full_width_efficiency:.2f} of the narrow rate and "
          f"{found.wide_extra_s * 1e6:.2f} us more per call (not in the profile); a further tile re-reads "
          f"{spec.reread_fraction:.2f} of the cache; t0 {found.t0_s * 1e6:.2f} us, narrow tiles at "
          f"{found.eta:.3f} of peak")
    for split, res in found.residuals.items():
        print(f"  {split:6} {len(res):3} rows  median |error| {statistics.median(abs(x) for x in res):.1%}  "
              f"within 10% {sum(abs(x) <= 0.1 for x in res)}  worst {max(res, key=abs):+.1%}")


if __name__ == "__main__":
    main()
