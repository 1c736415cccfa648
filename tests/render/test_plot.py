"""Charts: the sweep chart draws every slice or says which it drew, no legend covers the data, and a
size-only model's KV cache and activations are marked "not computed", never drawn as zero."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from estimator.catalog.registry import Catalog
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload
from estimator.render import plot

pytest.importorskip("matplotlib")
pytest.importorskip("numpy")


@pytest.fixture
def plt() -> Iterator[Any]:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    yield pyplot
    pyplot.close("all")


def _legend_clear_of_axes(fig: Any) -> None:
    fig.canvas.draw()
    legends = fig.legends
    assert legends
    for legend in legends:
        box = legend.get_window_extent()
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent()), "the legend covers a plot"


def _legend_texts(fig: Any) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_size_only_model_marks_kv_and_activations_not_computed(
        plt: Any, catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    report = estimate(catalog.model("70b"), catalog.gpus.get("a100"), make_workload())
    assert report.memory.kv_cache_per_gpu_bytes is None and report.memory.activation_per_gpu_bytes is None
    fig = plot.estimate_figure(plt, report)
    texts = _legend_texts(fig)
    assert "KV cache: not computed (size-only model)" in texts
    assert "activations: not computed (size-only model)" in texts
    assert "KV cache" not in texts and "activations" not in texts  # no bar drawn for them, not even one of zero
    bars = fig.axes[0].patches
    assert len(bars) == 2  # weights and overhead
    assert sum(b.get_height() for b in bars) == pytest.approx(
        (report.memory.weights_per_gpu_bytes + report.memory.overhead_per_gpu_bytes) / 1e9)
    _legend_clear_of_axes(fig)


def test_an_architecture_draws_every_part(plt: Any, catalog: Catalog,
                                          make_workload: Callable[..., InferenceWorkload]) -> None:
    report = estimate(catalog.model("llama-3.1-8b"), catalog.gpus.get("h100"), make_workload(batch=8))
    fig = plot.estimate_figure(plt, report)
    assert {"weights", "KV cache", "activations", "overhead"} <= set(_legend_texts(fig))
    assert not any("not computed" in t for t in _legend_texts(fig))
    _legend_clear_of_axes(fig)


def _sweep(catalog: Catalog, make_workload: Callable[..., InferenceWorkload], prompts: list[int]) -> Any:
    from estimator.planning.sweep import sweep

    items = [(catalog.model(m), catalog.gpus.get("h100"), make_workload(), "h100")
             for m in ("llama-3.1-8b", "llama-3.2-1b")]
    return sweep(items, [1, 8, 64], prompts, [256])


def test_sweep_chart_draws_every_slice(plt: Any, catalog: Catalog,
                                       make_workload: Callable[..., InferenceWorkload]) -> None:
    """2 models × 3 prompts at 3 batches: six lines of three points on each side, and the title says all six."""
    fig = plot.sweep_figure(plt, _sweep(catalog, make_workload, [1024, 8192, 32768]))
    speed, memory = fig.axes
    assert len(speed.get_lines()) == 6
    assert [len(line.get_xdata()) for line in speed.get_lines()] == [3] * 6
    assert len([line for line in memory.get_lines() if line.get_marker() == "o"]) == 6  # beside 6 capacity lines
    assert fig._suptitle.get_text() == "sweep: all 6 slices"
    labels = _legend_texts(fig)
    assert len(labels) == 6 and any("prompt 32,768" in label for label in labels)
    _legend_clear_of_axes(fig)


def test_sweep_chart_says_which_slices_it_drew(plt: Any, catalog: Catalog,
                                               make_workload: Callable[..., InferenceWorkload]) -> None:
    """2 models × 7 prompts = 14 slices, more than MAX_LINES (12): the first 12 are drawn and the title says so."""
    fig = plot.sweep_figure(plt, _sweep(catalog, make_workload, [256, 512, 1024, 2048, 4096, 8192, 16384]))
    assert len(fig.axes[0].get_lines()) == plot.MAX_LINES == 12
    assert fig._suptitle.get_text() == ("sweep: the first 12 of 14 slices (grid order; the CSV has every point)")
    _legend_clear_of_axes(fig)


def test_plan_chart_legend_is_clear_of_the_bars(plt: Any, shipped_catalog: Catalog) -> None:
    from estimator.planning.plan import Goal, load_prices
    from estimator.planning.plan import plan as run_plan

    c = shipped_catalog
    w = InferenceWorkload(weight_format=c.formats.get("bf16"), kv_format=c.formats.get("bf16"),
                          profile=c.profiles.get("optimized"), prompt_tokens=2048, output_tokens=256)
    pairs = [(s, c.system_gpu(s)) for s in (c.systems.get("hgx-h100"), c.systems.get("hgx-a100"))]
    from estimator.catalog.files import read_yaml

    prices = load_prices(read_yaml(c.root / "costs.yaml"), None, resolve=c.gpus.get, resolve_system=c.systems.get)
    fig = plot.plan_figure(plt, run_plan(c.model("llama-3.1-70b"), pairs, w, Goal(concurrency=32), prices))
    _legend_clear_of_axes(fig)
