"""Charts (matplotlib, an optional extra): memory breakdown against capacity, roofline, and sweep curves.

Charts draw what the reports hold; they compute nothing but ratios for axes. PNG or SVG by file extension.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from estimator.errors import MissingDependency, WorkloadInvalid
from estimator.render.output import atomic_path

if TYPE_CHECKING:
    from estimator.inference.report import Report
    from estimator.planning.plan import PlanReport
    from estimator.planning.sweep import SweepResult

GB = 1e9
_COLORS = {"weights": "#4C72B0", "KV cache": "#DD8452", "activations": "#55A868", "overhead": "#8C8C8C"}


def _pyplot(path: Path) -> Any:
    if path.suffix.lower() not in (".png", ".svg"):
        raise WorkloadInvalid(f"--plot writes .png or .svg files, got {path.name!r}")
    try:
        import matplotlib
    except ImportError:
        raise MissingDependency("--plot needs matplotlib: pip install 'estimator[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _stacked(ax: Any, labels: Sequence[str], parts: Mapping[str, Sequence[float]], capacity: Sequence[float]) -> None:
    """Stacked per-GPU memory bars, each with its card's capacity as a red line across the bar."""
    bottom = [0.0] * len(labels)
    x = list(range(len(labels)))
    for name, values in parts.items():
        ax.bar(x, [v / GB for v in values], bottom=bottom, label=name, color=_COLORS[name], width=0.6)
        bottom = [b + v / GB for b, v in zip(bottom, values, strict=True)]
    for i, cap in enumerate(capacity):
        ax.hlines(cap / GB, i - 0.4, i + 0.4, colors="red", linewidth=2, label="capacity" if i == 0 else None)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=60 if len(labels) > 3 else 0, ha="right" if len(labels) > 3 else "center",
                       fontsize=8)
    ax.set_ylabel("memory per GPU (GB, 10⁹ B)")
    ax.legend(fontsize=8)


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
    ax.legend(fontsize=8, loc="lower right")


def estimate_chart(report: Report, path: Path) -> None:
    """Per-GPU memory breakdown against capacity, and the roofline with the prefill and decode points."""
    plt = _pyplot(path)
    m, t, n = report.memory, report.time, report.workload.gpus
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5), gridspec_kw={"width_ratios": [1, 2]})
    parts = {"weights": [m.weights_per_gpu_bytes], "KV cache": [m.kv_cache_per_gpu_bytes or 0],
             "activations": [m.activation_per_gpu_bytes or 0], "overhead": [m.overhead_per_gpu_bytes]}
    _stacked(left, [f"{report.gpu.name}\n× {n}"], parts, [m.capacity_bytes])
    left.set_title(f"{report.model.name}: {m.per_gpu_bytes / GB:,.1f} of {m.capacity_bytes / GB:,.1f} GB per GPU",
                   fontsize=10)
    points = [("prefill", t.prefill_flop_per_byte, t.prefill_flop_per_s_per_gpu)]
    if t.decode_flop_per_byte and t.decode_flop_per_s_per_gpu:
        points.append(("decode step", t.decode_flop_per_byte, t.decode_flop_per_s_per_gpu))
    w = report.workload
    _roofline(right, report.gpu.peak_flop_per_s, report.gpu.bandwidth_bytes_per_s, points,
              f"{report.gpu.name} ({report.gpu.compute_dtype}); batch {w.batch}, prompt {w.prompt_tokens:,},\n"
              f"output {w.output_tokens:,}; points at expected ({w.profile}) time")
    fig.tight_layout()
    with atomic_path(path) as temporary:
        fig.savefig(temporary, format=path.suffix.lower().lstrip("."))
    plt.close(fig)


def plan_chart(report: PlanReport, path: Path) -> None:
    """Stacked per-GPU memory of every option that has a configuration, with each card's capacity, and tokens/s."""
    plt = _pyplot(path)
    options = [o for o in report.options if o.memory_per_gpu_bytes is not None]
    if not options:
        raise WorkloadInvalid("nothing to plot: no card holds the workload")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(8, 0.45 * len(options) + 3), 9), sharex=True)
    labels = [f"{o.gpu.removeprefix('NVIDIA ').removeprefix('AMD ')} ×{o.cards}" for o in options]
    parts = {"weights": [o.weights_per_gpu_bytes or 0 for o in options],
             "KV cache": [o.kv_cache_per_gpu_bytes or 0 for o in options],
             "activations": [o.activation_per_gpu_bytes or 0 for o in options],
             "overhead": [o.overhead_per_gpu_bytes or 0 for o in options]}
    _stacked(top, labels, parts, [o.capacity_bytes for o in options])
    top.set_title(f"{report.model} {report.dtype}, prompt {report.prompt_tokens:,} + output "
                  f"{report.output_tokens:,}: memory per GPU (ranked by {report.sort})", fontsize=10)
    x = list(range(len(options)))
    colors = ["#4C72B0" if o.feasible else "#C44E52" for o in options]
    bottom.bar(x, [o.tokens_per_s or 0 for o in options], color=colors, width=0.6)
    bottom.set_ylabel("generated tokens/s (all cards)")
    bottom.set_xticks(x)
    bottom.set_xticklabels(labels, rotation=60, ha="right", fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as temporary:
        fig.savefig(temporary, format=path.suffix.lower().lstrip("."))
    plt.close(fig)


def sweep_chart(result: SweepResult, path: Path) -> None:
    """Tokens/s and per-GPU memory against batch (or against context when batch does not vary), one line per
    (model, GPU, dtype, GPU count), the other grid axes at their first value."""
    plt = _pyplot(path)
    fig, (speed, memory) = plt.subplots(1, 2, figsize=(13, 5))
    axis = "batch"
    for block in result.blocks:
        b = block.columns["workload.batch"]
        if len(set(b.tolist())) == 1:
            axis = "context"
    for block in result.blocks:
        b, p, o = (block.columns[f"workload.{k}"] for k in ("batch", "prompt_tokens", "output_tokens"))
        if axis == "batch":
            keep = (p == p[0]) & (o == o[0])
            xs = b[keep]
            fixed = f"prompt {p[0]:,}, output {o[0]:,}"
        else:
            keep = (b == b[0]) & (o == o[0])
            xs = (p + o)[keep]
            fixed = f"batch {b[0]}, output {o[0]:,}"
        c = block.constants
        label = f"{c['model.name']} · {c['gpu.requested_as']} ×{c['workload.gpus']} · {c['workload.dtype']}"
        rates = block.columns.get("time.tokens_per_s")
        if rates is not None:
            ys = [r for r, k in zip(rates, keep.tolist(), strict=True) if k]
            speed.plot(xs, [y if y is not None else float("nan") for y in ys], marker="o", label=label)
        line = memory.plot(xs, block.columns["memory.per_gpu_bytes"][keep] / GB, marker="o", label=label)
        memory.axhline(c["memory.capacity_bytes"] / GB, color=line[0].get_color(), linestyle="--", linewidth=1)
        memory.set_title(f"memory per GPU ({fixed}); dashed: capacity", fontsize=10)
        speed.set_title(f"generated tokens/s ({fixed})", fontsize=10)
    for ax in (speed, memory):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch (sequences)" if axis == "batch" else "context (prompt + output tokens)")
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    speed.set_ylabel("tokens/s")
    memory.set_ylabel("GB (10⁹ B)")
    fig.tight_layout()
    with atomic_path(path) as temporary:
        fig.savefig(temporary, format=path.suffix.lower().lstrip("."))
    plt.close(fig)
