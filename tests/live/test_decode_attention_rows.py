"""The `optimized` profile's decode attention tiles against the rows they were read from (lab/fit/decode_attention.py
on tests/data/measured/attention) and against lean decodes measured after they were set (seed 7, held out)."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from estimator import default_catalog
from tests.lab_modules import lab_module


@pytest.fixture(scope="module")
def probe() -> Any:
    return lab_module("fit.decode_attention")


def test_the_shipped_tiles_are_the_fit_of_the_probe_rows(probe: Any) -> None:
    """Exact: the tile's rows and widths read from every row's kernel name and grid (`tiles` asserts each row's grid
    is KV heads × ⌈group / rows⌉ by batch), the two costs as the fit on the `fit` rows gives them."""
    rows = probe.rows_of()
    assert len(probe.attention(rows)) == 310
    assert default_catalog().profiles.get("optimized").decode_attention == probe.fit(rows).tiles


def test_the_rule_beats_one_read_of_the_cache_on_the_probe_check_rows(probe: Any) -> None:
    """The `check` rows (not fitted): the rule's median error below that of the same least squares with the cache read
    once at one rate (no tile holds a group of query heads apart and none is full-width: factor 1 everywhere)."""
    rows = probe.rows_of()
    spec = probe.fit(rows).tiles
    flat = spec.model_copy(update={"query_rows": 1024, "full_width_from": None})
    query_rows, _ = probe.tiles(rows)
    judged = probe.judged(rows, query_rows)
    fitting, check = ([r for r in judged if r["split"] == split] for split in ("fit", "check"))

    def error(chosen: Any) -> float:
        coef, _ = probe._lsq(fitting, chosen)
        found = probe._design(check, chosen) @ coef
        return float(statistics.median(abs(x - r["time"]["median_s"]) / r["time"]["median_s"]
                                       for x, r in zip(found, check, strict=True)))

    assert error(spec) < error(flat)


def test_held_out_lean_decodes_measured_after_the_tiles_were_set() -> None:
    """Seed 7 (30 architectures × 5 batch × context shapes, measured after the profile's tiles were fitted): more of
    its lean decode steps within the target's 10% with the tiles than without, none further off by more than 1 point,
    and every bound below its measurement."""
    points = lab_module("accuracy.random_points")
    catalog = default_catalog()
    optimized = catalog.profiles.get("optimized")
    once = optimized.model_copy(update={"decode_attention": None})
    rows = points.load(sorted(points.DATA.glob("*-seed7-lean.jsonl")))

    def errors(profile: Any) -> list[float]:
        found = [p for r in rows if r["kind"] == "lean_decode"
                 for p in points._model_points(catalog, r, lambda _: profile)]
        assert all(measured >= bound for _, term, bound, measured in found if term == "decode bound")
        return [(predicted - measured) / measured for _, term, predicted, measured in found
                if term == "decode optimized"]

    with_tiles, without = errors(optimized), errors(once)
    assert len(with_tiles) == 150
    assert sum(abs(e) <= 0.1 for e in with_tiles) > sum(abs(e) <= 0.1 for e in without)
    assert all(abs(a) <= abs(b) + 0.01 for a, b in zip(with_tiles, without, strict=True))


def test_the_grid_rule_gives_every_block_count_and_the_wave_rule_no_gain(probe: Any) -> None:
    """cuDNN's split of the context (`splits`, read off the seed-7 grids) gives the thread blocks of all 291
    tiled seed-7 rows and of the 40 wave rows chosen after it (the budget as first fixed, ≤ 256 blocks, 39 of them);
    the wave rule fixed with those shapes puts no more of them within 10% than the tiles alone, so it is not shipped."""
    rows = probe.rows_of()
    found = probe.fit(rows)

    def grid(r: dict[str, Any]) -> int:
        g = r["kernels"][0]["grid"]
        return int(g[0] * g[1] * g[2])

    tiled = [r for r in probe.attention(rows) if probe.kernel_tile(r)[0] == found.tiles.query_rows]
    assert len(tiled) == 291 and all(probe.blocks(r, found.tiles)[0] == grid(r) for r in tiled)
    checked = probe.wave_check(found.tiles, found)
    assert len(checked) == 40 and all(count == grid(r) for r, count, _, _ in checked)
    assert sum(probe.blocks(r, found.tiles, 257)[0] == grid(r) for r, *_ in checked) == 39
    assert sum(abs(w) <= 0.1 for *_, w in checked) <= sum(abs(a) <= 0.1 for _, _, a, _ in checked)
