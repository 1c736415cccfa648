"""Charts (matplotlib, an optional extra): memory breakdown against capacity, roofline, and sweep curves.

Charts draw what the reports hold; they compute nothing but ratios for axes. PNG or SVG by file extension.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from estimator.errors import FieldInvalid, MissingDependency, WorkloadInvalid
from estimator.render.output import atomic_path

if TYPE_CHECKING:
    from estimator.inference.report import Report
    from estimator.planning.plan import PlanReport
    from estimator.planning.sweep import SweepResult

GB = 1e9
_COLORS = {"weights": "#4C72B0", "KV cache": "#DD8452", "activations": "#55A868", "overhead": "#8C8C8C"}


def _pyplot(path: Path) -> Any:
    if path.suffix.lower() not in (".png", ".svg"):
        raise FieldInvalid("plot", "{plot} writes .png or .svg files, got {name}", name=repr(path.name))
    try:
        import matplotlib
    except ImportError:
        raise MissingDependency("--plot needs matplotlib: pip install 'llm-estimator[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _stacked(ax: Any, labels: Sequence[str], parts: Mapping[str, Sequence[int | None]],
             capacity: Sequence[float]) -> list[Any]:
    """Stacked per-GPU memory bars, each with its card's capacity as a red line across the bar. A part that is
    None on every bar (a size-only model's KV cache and activations) is not drawn as zero: its legend entry says
    "not computed" (returned: the legend entries of the parts left out)."""
    from matplotlib.patches import Patch

    missing: list[Any] = []
    bottom = [0.0] * len(labels)
    x = list(range(len(labels)))
    for name, values in parts.items():
        if all(v is None for v in values):
            missing.append(Patch(facecolor="white", edgecolor=_COLORS[name], hatch="//",
                                 label=f"{name}: not computed (size-only model)"))
            continue
        heights = [(v or 0) / GB for v in values]
        ax.bar(x, heights, bottom=bottom, label=name, color=_COLORS[name], width=0.6)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    for i, cap in enumerate(capacity):
        ax.hlines(cap / GB, i - 0.4, i + 0.4, colors="red", linewidth=2, label="capacity" if i == 0 else None)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=60 if len(labels) > 3 else 0, ha="right" if len(labels) > 3 else "center",
                       fontsize=8)
    ax.set_ylabel("memory per GPU (GB, 10⁹ B)")
    return missing


def _legend(fig: Any, axes: Sequence[Any], columns: int = 2, extra: Sequence[Any] = ()) -> None:
    """One legend for ``axes``, outside them below the plots, so that it never covers a bar, line or point."""
    handles: list[Any] = []
    labels: list[str] = []
    for ax in axes:
        h, lab = ax.get_legend_handles_labels()
        for handle, label in zip(h, lab, strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    for handle in extra:
        handles.append(handle)
        labels.append(handle.get_label())
    fig.legend(handles, labels, loc="outside lower center", ncol=columns, fontsize=8)


def _save(plt: Any, fig: Any, path: Path) -> None:
    with atomic_path(path, f"{path.suffix.lower().lstrip('.').upper()} chart") as temporary:
        fig.savefig(temporary, format=path.suffix.lower().lstrip("."))
    plt.close(fig)


def _roofline(ax: Any, peak: float, bandwidth: float, points: Sequence[tuple[str, float, float]], title: str) -> None:
    """Log-log roofline: attainable FLOP/s = min(peak, bandwidth × intensity); points at (intensity, FLOP/s)."""
    intensities = [p[1] for p in points if p[1] > 0]
    ridge = peak / bandwidth
    low = min([ridge, *intensities]) / 10
    high = max([ridge, *intensities]) * 10
    xs = [low * (high / low) ** (k / 200) for k in range(201)]
    ax.loglog(xs, [min(peak, bandwidth * x) for x in xs], color="black", label="roofline")
    ax.axhline(peak, color="black", linestyle=":", linewidth=0.8)
    ax.text(low * 1.2, peak * 1.15, f"compute ceiling {peak / 1e12:,.0f} TFLOP/s", fontsize=8)
    ax.text(low * 1.2, bandwidth * low * 1.6, f"bandwidth {bandwidth / 1e9:,.0f} GB/s", fontsize=8, rotation=0)
    for (name, intensity, flops), marker in zip(points, ["o", "s", "^", "D"], strict=False):
        ax.loglog([intensity], [flops], marker, markersize=9, label=f"{name}: {intensity:,.1f} FLOP/B, "
                  f"{flops / 1e12:,.1f} TFLOP/s")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("FLOP/s per GPU")
    ax.set_title(title, fontsize=10)


def estimate_chart(report: Report, path: Path) -> None:
    """Per-GPU memory breakdown against capacity, and the roofline with the prefill and decode points."""
    plt = _pyplot(path)
    _save(plt, estimate_figure(plt, report), path)


def estimate_figure(plt: Any, report: Report) -> Any:
    m, t, n = report.memory, report.time, report.workload.gpus
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 6), gridspec_kw={"width_ratios": [1, 2]},
                                      layout="constrained")
    parts: dict[str, list[int | None]] = {"weights": [m.weights_per_gpu_bytes], "KV cache": [m.kv_cache_per_gpu_bytes],
             "activations": [m.activation_per_gpu_bytes], "overhead": [m.overhead_per_gpu_bytes]}
    missing = _stacked(left, [f"{report.gpu.name}\n× {n}"], parts, [m.capacity_bytes])
    left.set_title(f"{report.model.name}: {m.per_gpu_bytes / GB:,.1f} of {m.capacity_bytes / GB:,.1f} GB per GPU",
                   fontsize=10)
    points = [("prefill", t.prefill_flop_per_byte, t.prefill_flop_per_s_per_gpu)]
    if t.decode_flop_per_byte and t.decode_flop_per_s_per_gpu:
        points.append(("decode step", t.decode_flop_per_byte, t.decode_flop_per_s_per_gpu))
    w = report.workload
    _roofline(right, report.gpu.peak_flop_per_s, report.gpu.bandwidth_bytes_per_s, points,
              f"{report.gpu.name} ({report.gpu.compute_dtype}); batch {w.batch}, prompt {w.prompt_tokens:,},\n"
              f"output {w.output_tokens:,}; points at expected ({w.profile}) time"
              + ("; hypothetical: does not fit" if t.hypothetical else ""))
    _legend(fig, [left, right], columns=3, extra=missing)
    return fig


def plan_chart(report: PlanReport, path: Path) -> None:
    """Stacked per-GPU memory of every option that has a configuration, with each card's capacity, and tokens/s."""
    plt = _pyplot(path)
    _save(plt, plan_figure(plt, report), path)


def plan_figure(plt: Any, report: PlanReport) -> Any:
    options = [o for o in report.options if o.memory_per_gpu_bytes is not None]
    if not options:
        raise WorkloadInvalid("nothing to plot: no card holds the workload")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(8, 0.45 * len(options) + 3), 10), sharex=True,
                                      layout="constrained")
    labels = [f"{o.gpu.removeprefix('NVIDIA ').removeprefix('AMD ')} ×{o.cards}" for o in options]
    parts: dict[str, list[int | None]] = {"weights": [o.weights_per_gpu_bytes for o in options],
             "KV cache": [o.kv_cache_per_gpu_bytes for o in options],
             "activations": [o.activation_per_gpu_bytes for o in options],
             "overhead": [o.overhead_per_gpu_bytes for o in options]}
    missing = _stacked(top, labels, parts, [o.capacity_bytes for o in options])
    top.set_title(f"{report.model} {report.dtype}, prompt {report.prompt_tokens:,} + output "
                  f"{report.output_tokens:,}: memory per GPU (ranked by {report.sort})", fontsize=10)
    x = list(range(len(options)))
    colors = ["#4C72B0" if o.feasible else "#C44E52" for o in options]
    bottom.bar(x, [o.tokens_per_s or 0 for o in options], color=colors, width=0.6)
    bottom.set_ylabel("generated tokens/s (all cards; red: misses the goal)")
    bottom.set_xticks(x)
    bottom.set_xticklabels(labels, rotation=60, ha="right", fontsize=8)
    _legend(fig, [top], columns=5, extra=missing)
    return fig


MAX_LINES = 12  # sweep slices drawn; the chart says when there are more


def sweep_chart(result: SweepResult, path: Path) -> None:
    """Tokens/s and per-GPU memory against batch (or against context when batch does not vary): one line per
    slice, a (model, GPU, dtype, GPU count) with each value of the other grid axes, up to MAX_LINES; the title
    says which it drew."""
    plt = _pyplot(path)
    _save(plt, sweep_figure(plt, result), path)


def _slices(result: SweepResult) -> tuple[str, list[tuple[str, Any, Any, Any]]]:
    """The chart's x axis and every slice: (label, the block, the points' mask, their x values)."""
    varies = any(len(set(block.columns["workload.batch"].tolist())) > 1 for block in result.blocks)
    axis = "batch" if varies else "context"
    slices = []
    for block in result.blocks:
        if block.error is not None:  # points without an estimate (their rows say why): nothing to draw
            continue
        b, p, o = (block.columns[f"workload.{k}"] for k in ("batch", "prompt_tokens", "output_tokens"))
        c = block.constants
        name = f"{c['model.name']} · {c['gpu.requested_as']} ×{c['workload.gpus']} · {c['workload.dtype']}"
        others = sorted({(int(x), int(y)) for x, y in zip(*((p, o) if axis == "batch" else (b, o)), strict=True)})
        for first, second in others:
            if axis == "batch":
                keep, xs = (p == first) & (o == second), b
                label = f"{name} · prompt {first:,}, output {second:,}"
            else:
                keep, xs = (b == first) & (o == second), p + o
                label = f"{name} · batch {first}, output {second:,}"
            slices.append((label, block, keep, xs[keep]))
    return axis, slices


def sweep_figure(plt: Any, result: SweepResult) -> Any:
    axis, slices = _slices(result)
    drawn = slices[:MAX_LINES]
    fig, (speed, memory) = plt.subplots(1, 2, figsize=(13, 5 + 0.2 * len(drawn)), layout="constrained")
    for label, block, keep, xs in drawn:
        rates = block.columns.get("time.tokens_per_s")
        if rates is not None:
            ys = [r for r, k in zip(rates, keep.tolist(), strict=True) if k]
            speed.plot(xs, [y if y is not None else float("nan") for y in ys], marker="o", label=label)
        line = memory.plot(xs, block.columns["memory.per_gpu_bytes"][keep] / GB, marker="o", label=label)
        memory.axhline(block.constants["memory.capacity_bytes"] / GB, color=line[0].get_color(), linestyle="--",
                       linewidth=1)
    shown = (f"all {len(slices)} slices" if len(drawn) == len(slices)
             else f"the first {len(drawn)} of {len(slices)} slices (grid order; the CSV has every point)")
    fig.suptitle(f"sweep: {shown}", fontsize=10)
    memory.set_title("memory per GPU; dashed: capacity", fontsize=10)
    speed.set_title("generated tokens/s", fontsize=10)
    for ax in (speed, memory):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch (sequences)" if axis == "batch" else "context (prompt + output tokens)")
        ax.grid(True, which="both", alpha=0.3)
    speed.set_ylabel("tokens/s")
    memory.set_ylabel("GB (10⁹ B)")
    _legend(fig, [memory], columns=2)
    return fig
