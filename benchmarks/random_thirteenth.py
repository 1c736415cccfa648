"""The thirteenth pass of issue 15 (docs/accuracy.md, written by benchmarks/random_report.py): where a transformers
prefill's peak sits and what the batch shares, read from live sets traced op by op on the CPU
(benchmarks/trace_live_cpu.py) and judged on every random prefill; every figure after the change is computed here,
the figures before it are quoted from commit 01119cb (`python benchmarks/random_points.py` there)."""

from __future__ import annotations

import json
import statistics
import textwrap
from pathlib import Path
from typing import Any

import reference_points
from random_points import DATA, load, model_of, points

from estimator import default_catalog
from estimator.catalog.registry import model_from_mapping
from estimator.model.footprint import activation_peak

TRACES = DATA.parent / "peak-traces" / "cpu-live-sets.jsonl"
CHECKS = DATA.parent / "peak-traces" / "h200-2026-12-02-peak-checks.jsonl"
SEED11 = DATA / "h200-2026-12-02-seed11-prefill.jsonl"
CATALOG = DATA.parent / "h200-2026-11-30.jsonl"
# the same rows under the model at commit 01119cb, before this pass (its `random_points.py`); the terms it changed
BEFORE_THIRTEENTH: dict[str, dict[str, tuple[int, int, float, str]]] = {
    "prefill activation": {
        "fit": (80, 74, 0.002, "+17.9% (s5/rand-i08 b8 s2048 logits=last)"),
        "held-out": (136, 126, 0.003, "−22.4% (s0/rand-i10 b1 s128 logits=last)"),
        "fresh": (120, 109, 0.003, "−20.5% (s3/rand-i18 b1 s128 logits=last)"),
        "seed 4": (88, 82, 0.004, "−24.5% (s4/rand-i14 b1 s128 logits=last)"),
        "seed 5": (52, 50, 0.005, "−5.7% (s5/rand-i19 b1 s512 logits=last)"),
        "seed 6": (64, 59, 0.001, "−30.5% (s6/rand-i08 b1 s128 logits=last)"),
        "seed 9": (96, 91, 0.002, "+16.8% (s9/rand-i13 b8 s2048 logits=last)"),
        "seed 10": (120, 114, 0.002, "+8.4% (s10/rand-i13 b8 s2048 logits=last)"),
    },
    "prefill_s": {
        "fit": (60, 38, 0.112, "+48.7% (s0/rand-i04 b1 s128 logits=last)"),
        "held-out": (102, 64, 0.099, "+42.3% (s1/rand-i10 b1 s2048 logits=last)"),
        "fresh": (90, 62, 0.095, "+50.4% (s3/rand-i23 b1 s512 logits=last)"),
        "seed 4": (66, 49, 0.068, "+45.5% (s4/rand-i14 b1 s128 logits=last)"),
        "seed 4 cal": (66, 47, 0.056, "−41.6% (s4/rand-i05 b1 s512 logits=last)"),
        "seed 5": (39, 24, 0.100, "−56.4% (s5/rand-i06 b1 s1024 logits=last)"),
        "seed 6": (48, 24, 0.155, "−46.5% (s6/rand-i10 b1 s128 logits=last)"),
        "seed 6 cal": (48, 29, 0.099, "−31.6% (s6/rand-i10 b1 s128 logits=last)"),
        "seed 9": (72, 46, 0.090, "−47.5% (s9/rand-i11 b1 s1024 logits=last)"),
        "seed 10": (90, 64, 0.079, "−49.4% (s10/rand-i15 b1 s2048 logits=last)"),
    },
    "train step": {
        "fresh": (25, 23, 0.044, "+22.3% (s3/rand-t03 amp b8 s256 ckpt)"),
        "seed 4": (18, 15, 0.068, "+34.1% (s4/rand-t13 bf16 b2 s1024 ckpt)"),
    },
}
# the catalog's masked-kernel rows before this pass (commit 01119cb, benchmarks/reference_points.py)
BEFORE_CATALOG = {"mistral-7b-v0.1 prefill b1 s2048": 0.095, "mistral-7b-v0.1 prefill b1 s8192": -0.031,
                  "mistral-7b-v0.1 prefill b8 s2048": 0.060, "gemma-2-9b prefill b1 s2048": 0.030,
                  "gemma-2-9b prefill b1 s8192": 0.060, "gemma-2-9b prefill b8 s2048": 0.051}
TARGETS = {"prefill activation": 0.05, "prefill_s": 0.15, "train step": 0.15}


def _wrap(text: str, first: str = "   ") -> str:
    return textwrap.fill(text, width=120, initial_indent=first, subsequent_indent="   ", break_on_hyphens=False)


def _pct(x: float) -> str:
    return f"{x:+.1%}".replace("-", "−")


def traced() -> tuple[int, int]:
    """(rows, rows whose predicted peak equals the traced live set to the byte)."""
    hf = default_catalog().profiles.get("hf")
    rows = _traces()
    exact = 0
    for row in rows:
        config = {**row["config"], "num_hidden_layers": row["layers"]}
        arch = model_from_mapping({"name": "traced", "config": config}, Path("traced")).arch
        assert arch is not None
        peak = activation_peak(arch, hf, row["batch"], row["prompt"], element_bytes=4 if row["dtype"] == "fp32" else 2,
                               logits_all=row["logits_to_keep"] == 0)
        exact += peak.bytes == row["activation"]
    return len(rows), exact


def slack(rows: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    """(measured − predicted activation in bytes, measured, prompt) of the random 16-bit prefills of at most 512
    tokens at batch 1 in the families the traces cover exactly (llama, qwen2, mistral, gpt2): the caching
    allocator's blocks."""
    hf = default_catalog().profiles.get("hf")
    out: list[tuple[int, int, int]] = []
    for row in rows:
        if (row.get("kind") != "model" or row.get("phase") != "prefill" or row.get("error") or row["batch"] != 1
                or row["prompt"] > 512 or row.get("dtype") == "fp32"
                or row["config"]["model_type"] not in ("llama", "qwen2", "mistral", "gpt2")):
            continue
        arch = model_of(row).arch
        assert arch is not None
        peak = activation_peak(arch, hf, 1, row["prompt"], element_bytes=2, logits_all=row["logits_to_keep"] == 0)
        measured = row["peak_minus_before"] - row["kept_after"]
        out.append((measured - peak.bytes, measured, row["prompt"]))
    return out


def _share(rows: list[dict[str, Any]]) -> str:
    """What the blocks are worth against the measured activation of those rows, at 128 tokens and at 512."""
    parts = []
    for prompt in (128, 512):
        shares = [extra / measured for extra, measured, p in slack(rows) if p == prompt and extra > 0]
        parts.append(f"{min(shares):.1%}–{max(shares):.1%} of the measured activation at {prompt} tokens")
    return ", ".join(parts)


def checked() -> tuple[int, int, float, float]:
    """The traced prefills run on the H200: (cases, cases whose requested bytes equal the trace, least and most the
    allocator's blocks held beyond them, MiB)."""
    rows = [json.loads(line) for line in CHECKS.read_text(encoding="utf-8").splitlines() if line.strip()]
    same = sum(r["requested_peak_minus_before"] - r["requested_kept_after"] == r["traced"] for r in rows)
    extra = [(r["peak_minus_before"] - r["kept_after"]) - (r["requested_peak_minus_before"] - r["requested_kept_after"])
             for r in rows]
    return len(rows), same, min(extra) / 2**20, max(extra) / 2**20


def _blind() -> str:
    """Seed 11's verdict on both figures of the peak."""
    pts = [p for p in points(load([SEED11])) if p.term in ("prefill activation", "prefill requested")]
    out = []
    for term, what in (("prefill activation", "the allocator's blocks"), ("prefill requested", "the tensors' bytes")):
        now = [p for p in pts if p.term == term]
        sixteen = [p for p in now if p.dtype != "fp32"]
        worst = max(now, key=lambda p: abs(p.error))
        exact, exact16 = (sum(p.predicted == p.measured for p in group) for group in (now, sixteen))
        out.append(f"against {what} {sum(abs(p.error) <= 0.05 for p in now)} of {len(now)} within ±5% "
                   f"({exact} to the byte, {exact16} of the {len(sixteen)} 16-bit ones; worst {_pct(worst.error)}, "
                   f"{worst.model} {worst.dtype} {worst.case})")
    return "; ".join(out)


def _checks() -> str:
    cases, same, least, most = checked()
    return (f"the bytes the tensors requested at the peak (`torch.cuda.memory_stats`' `requested_bytes`) equal the "
            f"trace on {same} of {cases}, and the allocator's blocks held {least:.2f}–{most:.2f} MiB more")


def _example(rows: list[dict[str, Any]]) -> str:
    """The traced live set, the prediction and the H200's figure of seed 0's rand-i10 at batch 1 × 128 tokens."""
    row = next(r for r in rows if r.get("seed", 0) == 0 and r.get("model") == "rand-i10" and r.get("phase") == "prefill"
               and r["prompt"] == 128)
    arch = model_of(row).arch
    assert arch is not None
    predicted = activation_peak(arch, default_catalog().profiles.get("hf"), 1, 128, element_bytes=2,
                                logits_all=False).bytes
    trace = _trace_of(row["config"], 128)
    return (f"traced {trace:,} B, predicted {predicted:,} B, the H200 "
            f"{row['peak_minus_before'] - row['kept_after']:,} B")


def _traces() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TRACES.read_text(encoding="utf-8").splitlines() if line.strip()]


def _trace_of(config: dict[str, Any], prompt: int) -> int:
    return next(int(r["activation"]) for r in _traces() if r["config"] == config and r["prompt"] == prompt)


Before = dict[str, dict[str, tuple[int, int, float, str]]]


def before_after_table(rows: list[dict[str, Any]], before: Before, targets: dict[str, float]) -> list[str]:
    """The terms of ``before`` (cases, within target, median |error|, worst, per split, quoted from the commit before
    a pass) beside the same rows' figures under today's model, as a pass's table in docs/accuracy.md."""
    after: dict[tuple[str, str], list[Any]] = {}
    for p in points(rows):
        if p.term in before:
            after.setdefault((p.term, p.split), []).append(p)
    lines = ["   | term | target | split | cases | within target: before → after | median abs error | worst after |",
             "   | --- | --- | --- | ---: | ---: | ---: | --- |"]
    for term, splits in before.items():
        for split, (cases, within, median, _) in splits.items():
            now = after[(term, split)]
            inside = sum(abs(p.error) <= targets[term] for p in now)
            worst = max(now, key=lambda p: abs(p.error))
            assert len(now) == cases  # the same rows
            lines.append(f"   | {term} | ±{targets[term]:.0%} | {split} | {cases} | {within} → {inside} | "
                         f"{median:.1%} → {statistics.median(abs(p.error) for p in now):.1%} | "
                         f"{_pct(worst.error)} ({worst.model} {worst.case}) |")
    return lines


def _catalog() -> str:
    now = {p.case.removesuffix(" logits=last"): p.error for p in reference_points.points(CATALOG)
           if p.term == "prefill_s hf" and p.case.removesuffix(" logits=last") in BEFORE_CATALOG}
    return "; ".join(f"{case} {_pct(BEFORE_CATALOG[case])} → {_pct(now[case])}" for case in BEFORE_CATALOG)


def thirteenth_pass(data: Path = DATA) -> str:
    rows = load(sorted(data.glob("*.jsonl")))
    count, exact = traced()
    extra = [e for e, _, _ in slack(rows)]
    hf = default_catalog().profiles.get("hf")
    text = (
        "25. **Where a transformers prefill's peak sits, and what the batch shares** (the random prefill peaks missed "
        "±5% on gemma2 at batch 8 × 2,048 tokens by up to +17.9%, on a 46-head × 256 gemma2 by −30.5% at every "
        "shape, and read a little high on every llama-family row above batch 1). `benchmarks/trace_live_cpu.py` runs "
        "a prefill on the CPU under a TorchDispatchMode that follows every storage an operation returns until its "
        "last tensor dies — the live set without the GPU's caching allocator — and lists what is alive at the peak. "
        "It showed four things the model had wrong, each then visible on the H200 rows: (a) transformers builds "
        "position ids as `arange(s).unsqueeze(0)`, so the rotary cos/sin tables and the position ids are one row per "
        "position, shared by the batch (every random llama / qwen2 / mistral row at batch 2–8 had read (batch − 1) × "
        "s × (2 × head_dim × element size + 8) bytes high); (b) a sliding layer's mask exists only once the keys "
        "reach its window (`masking_utils._ignore_causal_mask_sdpa`: kv_length ≥ window) and is 1 × 1 × s × s, "
        "broadcast over the batch — every gemma2 row below its 4,096-token window had read exactly b × s² bytes high "
        "— and the same rule decides the time: below the window the layer runs the fused kernel, at or above it the "
        "masked kernel over every causal pair, and full-attention layers never get a mask "
        "(`estimator.model.attention_kernels`; prefill and training steps; `--explain` and the report state the rule "
        "for the model's layers in a `prefill-attention` note); (c) where heads × head_dim is wide "
        "against the MLP the peak is the query's rotary embedding — q, q·cos, rotate_half(q) and its product with "
        "sin, 4 query widths, beside 3 hidden-wide tensors (`memory.attention_entry_bytes`); (d) the rotary tables "
        "are the model forward's locals, gone when the LM head runs, so an all-positions prefill's logits stage holds "
        "the logits and the normed hidden states alone (every such row had read the tables' bytes high). The formula "
        f"now equals the traced live set to the byte on {exact} of {count} traced prefills "
        "(`tests/data/measured/peak-traces/cpu-live-sets.jsonl`: llama, qwen2, mistral, gpt2 at batch 2–4, gemma2 "
        "below, at and past its window, and the wide gemma2). The masked kernel's efficiency was refitted on the one "
        "catalog row that runs it (mistral-7b-v0.1 at 8,192 tokens; its 2,048-token rows run no mask): 0.17 → "
        f"{hf.masked_attention_flop_efficiency:.2f}. Catalog prefill time: {_catalog()}. On the H200 "
        f"(`benchmarks/measure_peak_checks.py`, the traced prefills rebuilt there): {_checks()}. Seed 11 (30 more "
        "random architectures, prefills only, measured after (a)–(c) were committed, with `measure_prefill` now "
        f"recording both figures): {_blind()}. It is blind for (a)–(c) only: (d) was found on its rows — before it, "
        "71 rows were exact to the byte and its 16-bit misses were its 11 all-positions rows, +0.03% to +0.93% "
        "(quoted). Before (commit 01119cb, quoted) → after, every random row:")
    tail = (
        "What still misses ±5% is small: the H200's `max_memory_allocated` counts the caching allocator's blocks, "
        "and a block is handed out whole when what would remain is under 1 MiB (and rounded to 512 bytes; PyTorch's "
        "CUDACachingAllocator). Over the "
        f"{len(extra)} random 16-bit prefills of at most 512 tokens at batch 1 in the families traced exactly, the "
        f"device held {min(extra) / 2**20:.2f}–{max(extra) / 2**20:.2f} MiB more than the predicted live set "
        f"({sum(e > 0 for e in extra)} rows above it, {sum(e == 0 for e in extra)} exactly on it, "
        f"{sum(e < 0 for e in extra)} below) — {_share(rows)}. "
        f"Those tensors are counted exactly (s0/rand-i10 at 128 tokens: {_example(rows)}); the blocks depend on what "
        "the allocator held before, which no architecture decides. "
        "fp32 grouped-query rows run the math kernel, whose scratch the CPU (torch 2.13) holds differently from the "
        "H200 (torch 2.11): those traces are not used, and the kernel's 9 bytes per score stay the H200 probe's.")
    return "\n".join(["### Thirteenth pass (item 25): where a prefill's peak sits, and what the batch shares", "",
                      _wrap(text, ""), "", *before_after_table(rows, BEFORE_THIRTEENTH, TARGETS), "", _wrap(tail), ""])
