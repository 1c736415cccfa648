"""The parts of docs/accuracy.md measured below a whole phase: what sets an HF phase (the host or the GPU), the host's
dispatch, the decode attention kernels and a prefill's kernels, each from the probes of tests/data/measured and the
fit scripts of lab/fit that read them."""

from __future__ import annotations

import statistics

from estimator import default_catalog
from lab.accuracy import fp32_decode, host_split
from lab.fit import decode_attention, gemm, grouped_experts, host_per_op_s, repeat_kv
from lab.fit import host_op_bare_ratio as host_state
from lab.fit.gpu_per_op_s import graph_decodes, per_op_fit

TARGET = {"prefill_s": "±15%", "decode hf": "±30%"}


def _median_abs(values: list[float]) -> float:
    return statistics.median(abs(v) for v in values)


def split_table(points: list[host_split.PhasePoint], term: str) -> list[str]:
    """The term's random HF cases split by what their estimate says sets the phase (the `host-bound` note or not)."""
    out = [f"What sets the phase, by the estimate ({term}, target {TARGET[term]}):", "",
           "| set by | cases | within target | median abs error | measured inside the stated span |",
           "| --- | ---: | ---: | ---: | ---: |"]
    for host in (False, True):
        s = host_split.split_figures(points, term, host)
        span = f"{s.in_span} of {s.cases}" if host else "—"
        out.append(f"| {'the host' if host else 'the GPU'} | {s.cases} | {s.within} | {s.median:.1%} | {span} |")
    return [*out, ""]


def gpu_misses(points: list[host_split.PhasePoint]) -> str:
    """The GPU-bound prefills that miss: how many the host set after all, and the GPU's own."""
    missed, host_set = host_split.host_set_gpu_misses(points, "prefill_s")
    own = [p for p in host_split.gpu_misses(points, "prefill_s") if not host_split.host_set(p)]
    fp32 = [p.error for p in own if p.dtype == "fp32"]
    return (f"Of the GPU-bound prefills that miss ±15% and recorded their host's issue time, the host issued for at "
            f"least 0.9 × the GPU's time in {host_set} of {missed}: the host set those too. The GPU's own misses are "
            f"{len(own)}, {len(fp32)} of them fp32 prompts that read {min(fp32):+.1%} to {max(fp32):+.1%} "
            "(not explained).")


def _ratio_line(points: list[host_split.PhasePoint], term: str) -> str:
    ratios = host_split.host_ratios(points, term)
    far = host_split.beyond_median_ratio(ratios)
    return (f"| {term} | {len(ratios)} | {statistics.median(ratios):.2f} | {host_split.percentile(ratios, 10):.2f}–"
            f"{host_split.percentile(ratios, 90):.2f} | {far} of {len(ratios)} |")


def host_section(points: list[host_split.PhasePoint]) -> list[str]:
    """The operations counted, the cost per operation fitted, and how far one figure follows the host."""
    hf = default_catalog().profiles.get("hf")
    rows = host_per_op_s.load(sorted(host_per_op_s.DATA.glob("*.jsonl")))
    pairs = [pair for row in rows if (pair := host_per_op_s.counted(row, hf))]
    fitted, used = host_per_op_s.per_op_fit(rows, hf)
    issued = [p.issue["host_s"] / p.ops * 1e6 for p in points
              if p.term == "prefill_s" and p.span is not None and p.ops and "host_s" in p.issue]
    seeds = [host_state.states(host_state.rows_of(), seed) for seed in host_state.SEEDS]
    cases, missed, recorded, host_bound = host_split.train_host_set()
    return [
        f"- **Operations**: the `hf` profile's count of the aten operations a step dispatches (per layer, outside "
        f"the layers, the math kernel's one more) equals what the rows counted in {sum(m == p for m, p in pairs)} of "
        f"{len(pairs)} prefills and eager decodes (five families, fp32 and 16-bit, 2–28 layers).",
        f"- **Cost per operation**: `host_per_op_s` {hf.host_per_op_s * 1e6:.2f} µs, least squares over {used} "
        f"host-bound fit rows ({fitted * 1e6:.2f} µs; `python -m lab.fit.host_per_op_s`). Over the host-bound "
        f"prefills the host spent {host_split.percentile(issued, 10):.1f} to {host_split.percentile(issued, 90):.1f} "
        "µs an operation (10th–90th percentile).",
        "- **The host's two states**: a bare launch probed before every case reads one of two speeds, about "
        + ", ".join(f"{s.slow_s / s.fast_s:.2f}×" for s in seeds)
        + f" apart (seeds {', '.join(str(s.seed) for s in seeds)}), "
        "switching from case to case. So a host-bound phase has a span, which the estimate states (`host-bound`), "
        "and `estimator calibrate` measures the host it runs on.",
        "- **One figure cannot follow the host even where its state is known**: the host's issue time per counted "
        "operation ÷ the bare launch probed just before the same case:", "",
        "| term | host-bound cases with an issue record | median ratio | 10th–90th percentile | beyond ±15% at the "
        "median ratio × the case's own probe |", "| --- | ---: | ---: | ---: | ---: |",
        _ratio_line(points, "prefill_s"), _ratio_line(points, "decode hf"), "",
        f"- **Training steps**: {missed} of {cases} random steps miss ±15%; {recorded} of those recorded the host's "
        f"issue time, and in {host_bound} of them the host issued for at least 0.85 × the step.", ""]


def decode_kernel_section() -> list[str]:
    """The lean decode's attention tiles, transformers' repeat_kv copies, the fp32 walk and the graph's fixed cost."""
    probe = decode_attention.rows_of()
    tiles = decode_attention.fit(probe)
    copies = repeat_kv.copy_rates(repeat_kv.rows_of())
    parts = fp32_decode.kernel_parts()
    wide = [p for p in parts if p.batch > 1]
    attention = [p.attention_after_s / p.attention_s - 1 for p in parts]
    gemms = [p.gemm_after_s / p.gemm_s - 1 for p in wide]
    found = graph_decodes()
    return [
        "| kernel | source | rows judged | median abs error |", "| --- | --- | ---: | ---: |",
        f"| lean decode attention (SDPA, one query a sequence; the `optimized` profile's tiles) | "
        f"`attention/h200-2026-12-01-decode-attention.jsonl`, check rows | {len(tiles.residuals['check'])} | "
        f"{_median_abs(tiles.residuals['check']):.1%} |",
        *(f"| repeat_kv's copy of the KV heads, {dtype} | `attention/h200-2026-12-02-hf-decode-attention.jsonl`, "
          f"check rows | {len(res)} | {_median_abs(res):.1%} |" for dtype, (_, res) in copies.items()),
        f"| fp32 decode attention, walked by waves | seeds 5–6 kernel busy time | {len(attention)} | "
        f"{_median_abs(attention):.1%} |",
        f"| fp32 decode GEMMs by shape, two sequences or more | seeds 5–6 kernel busy time | {len(gemms)} | "
        f"{_median_abs(gemms):.1%} |", "",
        f"The CUDA-graph decode's fixed cost is {per_op_fit(found) * 1e6:.2f} µs per operation the host would have "
        "dispatched (`hf-graph`'s `gpu_per_op_s`: the median over seed 0's 16-bit fit graph decodes, "
        "`python -m lab.fit.gpu_per_op_s`).", ""]


def prefill_kernel_section() -> list[str]:
    """A prefill's GEMMs by shape and transformers' grouped experts, each judged on its probe's check rows."""
    out = ["| kernel | source | rows judged | median abs error |", "| --- | --- | ---: | ---: |"]
    profile = default_catalog().profiles.get("hf")
    for label, dtypes, spec in (("16-bit", ("bf16", "fp16"), profile.gemm), ("fp32", ("fp32",), profile.fp32_gemm)):
        assert spec is not None
        measured = gemm.rows(dtypes=dtypes)
        for kind in ("linear", "bmm"):
            check = [r for r in measured if r["split"] == "check" and r["kind"] == kind]
            if check:
                out.append(f"| {label} GEMMs ({kind}) by shape | `h200-2026-12-02-prefill-gemm.jsonl`, check rows | "
                           f"{len(check)} | {gemm.median_abs(gemm.errors(check, spec)):.1%} |")
    moe = grouped_experts.rows_of()
    _, _, grouped = grouped_experts.gemm_fit(moe)
    _, dispatch = grouped_experts.dispatch_fit(moe, profile.bandwidth_efficiency)
    out += [f"| grouped experts' GEMMs | `h200-2026-12-02-moe-block.jsonl`, check rows | {len(grouped['check'])} | "
            f"{_median_abs(grouped['check']):.1%} |",
            f"| grouped experts' dispatch | `h200-2026-12-02-moe-block.jsonl`, check rows | {len(dispatch['check'])} | "
            f"{_median_abs(dispatch['check']):.1%} |", ""]
    return out
