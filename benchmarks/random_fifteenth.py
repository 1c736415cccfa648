"""The fifteenth pass of issue 15 (docs/accuracy.md, written by benchmarks/random_report.py): what a training step's
norms keep for backward — Gemma's fp32-scaled RMSNorm, the norms after each block, q/k norms — and the rotary tables
the batch shares (item 27); a decode step on PyTorch's math SDPA kernel (item 28). Every figure after the change is
computed here; the figures before it are quoted from commit a3c9c80 (`python benchmarks/random_points.py --term "train
steady peak"`, `python benchmarks/training_points.py tests/data/measured/*.jsonl` and `python
benchmarks/reference_points.py tests/data/measured/h200-2026-11-30-extra.jsonl` there).

    python benchmarks/random_fifteenth.py      # the section as docs/accuracy.md prints it
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import random_points
import reference_points
import training_points
from random_points import DATA, load, points
from random_thirteenth import Before, _pct, _wrap, before_after_table

from estimator import default_catalog
from estimator.catalog.registry import model_from_mapping
from estimator.training.estimate import estimate_training
from estimator.training.workload import TrainingWorkload

TRACES = DATA.parent / "peak-traces" / "cpu-train-live-sets.jsonl"
SEED12 = DATA.parent / "random-h100" / "h100-2026-12-06-seed12.jsonl"
HOST_OPS = DATA.parent / "h100-2026-12-06-host-ops.jsonl"
# seed 12's training rows under the model at a3c9c80 (before item 27), by model: steady peak error
BEFORE_SEED12 = {"rand-t00": -0.0057, "rand-t01": -0.0013, "rand-t02": -0.0127, "rand-t04": -0.0250,
                 "rand-t05": -0.0517, "rand-t06": -0.0010, "rand-t07": -0.0007, "rand-t08": -0.0113,
                 "rand-t09": -0.0095, "rand-t10": -0.0411}
CATALOG = DATA.parent / "h200-2026-11-30-extra.jsonl"
TARGETS = {"train steady peak": 0.05}
# the same rows under the model at commit a3c9c80, before this pass
BEFORE_FIFTEENTH: Before = {
    "train steady peak": {
        "fit": (17, 16, 0.0024, "−5.2% (s5/rand-t15 amp b1 s4096)"),
        "held-out": (35, 34, 0.0032, "−7.4% (s1/rand-t19 bf16 b8 s256)"),
        "fresh": (25, 24, 0.0025, "−10.4% (s3/rand-t19 bf16 b1 s4096)"),
        "seed 4": (18, 18, 0.0030, "+3.8% (s4/rand-t00 amp b8 s256 ckpt)"),
        "seed 5": (9, 9, 0.0015, "−3.6% (s5/rand-t11 fp32 b1 s2048)"),
        "seed 6": (15, 14, 0.0009, "−11.1% (s6/rand-t07 bf16 b1 s4096)"),
        "seed 8": (30, 30, 0.0043, "−3.9% (s8/rand-t26 fp32 b1 s4096)"),
    },
}
BEFORE_GEMMA3 = -0.0924  # gemma-3-1b amp b2 s2048, the catalog's training row, at a3c9c80
# falcon-7b's eager decodes (the catalog's second run), at a3c9c80: the host's floor alone, 30.9 ms at every batch
BEFORE_FALCON = {"b1 ctx1024": 0.496, "b16 ctx4096": -0.754, "b64 ctx2048": -0.864}


def _traces() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TRACES.read_text(encoding="utf-8").splitlines()]


def traced_gaps() -> list[tuple[str, str, int, int]]:
    """(family, mode, traced steady peak, traced − predicted) of each CPU-traced step."""
    catalog = default_catalog()
    out = []
    for row in _traces():
        config = {**row["config"], "num_hidden_layers": row["layers"]}
        spec = model_from_mapping({"name": "traced", "config": config}, Path("traced"))
        workload = TrainingWorkload(batch=row["batch"], seq_len=row["seq"], precision=row["mode"], optimizer="adamw",
                                    attention="sdpa", profile=catalog.profiles.get("hf"))
        peak = estimate_training(spec, catalog.gpus.get("h200"), workload).memory.peak_tensor_bytes
        out.append((row["config"]["model_type"], row["mode"], row["steady_peak"], row["steady_peak"] - peak))
    return out


def gemma3_error() -> float:
    rows = [json.loads(line) for line in CATALOG.read_text(encoding="utf-8").splitlines()]
    row = next(r for r in rows if r.get("kind") == "train" and r.get("model") == "gemma-3-1b")
    return training_points.predict(row, "h200").memory.peak_tensor_bytes / row["steady_peak"] - 1


def seed12() -> str:
    """Seed 12's training steady peaks before → after, by row (an H100's rows; the peak does not depend on it)."""
    catalog = default_catalog()
    rows = [json.loads(line) for line in SEED12.read_text(encoding="utf-8").splitlines()]
    out = []
    for row in rows:
        if row.get("kind") == "train" and not row.get("error"):
            p = next(p for p in random_points._train_points(catalog, row) if p[1] == "train steady peak")
            out.append(f"{row['config']['model_type']} {row['mode']} {_pct(BEFORE_SEED12[row['model']])} → "
                       f"{_pct(p[2] / p[3] - 1)}")
    return "; ".join(out)


def host_ops() -> str:
    """The H100's host seconds per call of a decode layer's operations issued alone, by dtype (fp32 / bf16)."""
    rows = [json.loads(line) for line in HOST_OPS.read_text(encoding="utf-8").splitlines()]
    us = {(r["dtype"], r["op"]): r["host_s"] * 1e6 for r in rows if r.get("kind") == "op" and "host_s" in r}
    names = ("to float32", "linear", "sdpa unmasked", "sdpa masked (static cache)", "mul", "reshape (view)")
    return ", ".join(f"{name} {us[('fp32', name)]:.1f} / {us[('bf16', name)]:.1f}" for name in names)


def layer_scatter() -> tuple[float, float]:
    """The smallest and largest host cost of a layer's counted operation over the bare launch probed around it."""
    rows = [json.loads(line) for line in HOST_OPS.read_text(encoding="utf-8").splitlines()]
    ratios = [r[phase]["layer_s"] / r[phase]["layer_op_count"] / ((r["probe_before_s"] + r["probe_after_s"]) / 2)
              for r in rows if r.get("kind") == "layer" and not r.get("error") for phase in ("decode", "prefill")]
    return min(ratios), max(ratios)


def falcon_rows(term: str, before: dict[str, float], prefix: str, suffix: str = "") -> str:
    """falcon-7b's catalog rows of ``term``, each case's error before → now (cases named without ``prefix`` and
    ``suffix``)."""
    now = {p.case.removeprefix(prefix).removesuffix(suffix): p.error for p in reference_points.points(CATALOG)
           if p.term == term and p.case.startswith("falcon-7b")}
    return ", ".join(f"{case} {_pct(error)} → {_pct(now[case])}" for case, error in before.items())


def falcon_decodes() -> str:
    return falcon_rows("decode_step_s hf eager", BEFORE_FALCON, "falcon-7b hf decode ")


MATH_DECODE = (
    "28. **A decode step on PyTorch's math SDPA kernel** (falcon-7b's eager decode read −75% at 16 × 4,096 and −86% "
    "at 64 × 2,048: the estimate was the host's floor, the same 30.9 ms at every batch). Falcon's attention hands SDPA "
    "its one KV head and a mask without `enable_gqa`, so only the math kernel runs (item 1), and its composite "
    "(`_scaled_dot_product_attention_math`, traced under torch.profiler on the CPU; tests/model/test_math_decode.py) "
    "upcasts q, k and v to fp32, and each of its two matmuls broadcasts the KV head over the 71 query heads: "
    "`expand` then `reshape` copies K, then V, once per query head in fp32 — 2 × b × 71 × context × 64 elements a "
    "layer — before a batched fp32 GEMM of one query row per sequence and head. Timed with figures the profile "
    "already held, nothing fitted here (`attention_kernels.unexpanded_math_work`, `timing.math_kernel_s`): the "
    "copies at repeat_kv's fp32 rate (the same expand and reshape, 3.80e11 elements a second, item 19) and the GEMMs "
    "by shape at the fp32 GEMM figures of item 23 (4.0 µs, operands' and output's bytes at 0.25 of the bandwidth), and "
    "the cache read once by the upcast, where the estimate had charged item 17's tile walks of a decode kernel that "
    "does not run (43 reads of it for 71 query heads on one KV head). falcon-7b "
    "decode, before → after: {falcon} — the rows that showed the miss are the only ones that judge it, so this is "
    "not blind. `--explain` and the report carry a `decode-math-attention` note. The prefill "
    "of the same model stays −21% to −31% (its scores' passes on the math kernel); not touched here (item 30).")


BEFORE_AMP_RECOMPUTE = {"llama-3.2-1b": 0.0666, "qwen2.5-0.5b": 0.0327}  # amp b4 s2048 checkpointed, at a3c9c80


def amp_recompute() -> str:
    rows = [json.loads(line) for line in (DATA.parent / "h200-2026-11-30.jsonl").read_text().splitlines()]
    out = []
    for row in rows:
        if row.get("kind") == "train" and row["mode"] == "amp" and row["checkpointing"]:
            now = training_points.predict(row, "h200").memory.peak_tensor_bytes / row["steady_peak"] - 1
            out.append(f"{row['model']} {_pct(BEFORE_AMP_RECOMPUTE[row['model']])} → {_pct(now)}")
    return ", ".join(out)


AMP_RECOMPUTE = (
    "29. **Autocast with full recomputation** (the catalog's amp checkpointed steps read high: llama-3.2-1b +6.7%, "
    "qwen2.5-0.5b +3.3%; the random amp checkpointed rows whose forward and backward set the peak read +0.2% to "
    "+4.3%). Each miss was the decoder layers' bf16 weight copies to the megabyte (llama-3.2-1b: 1.95 GB over, 2 × "
    "973,078,528 bytes). Autocast caches its 16-bit copy of each weight while the forward runs and drops "
    "the cache when the forward leaves the autocast region; without recomputation the layers' matmuls save the "
    "copies for backward, with it nothing does — each layer's recompute casts its own again. So backward starts "
    "with only the output layer's copy (`training.step_phases`, `states.checkpointed_autocast_numel`), the "
    "recompute phase holds one layer's besides, and the forward's end — every copy, the checkpoints and the logits "
    "at the loss (their compute-dtype and fp32 copies beside the saved log-softmax, `loss_forward_bytes`) — is the "
    "phase's other candidate, which sets it where the copies outweigh the loss gradients (a large model on few "
    "tokens). Catalog, before → after: {catalog}. The rows that showed the miss judge it, so this is not blind; "
    "every random training row stays within ±5% (table).")


def fifteenth_pass(data: Path = DATA) -> str:
    rows = load(sorted(data.glob("*.jsonl")))
    gemma = [p for p in points(rows) if p.family == "gemma2" and p.term == "train steady peak"
             and not p.split.endswith(" cal")]
    gaps = traced_gaps()
    largest = max(gap for *_, gap in gaps)
    traced = ", ".join(f"{family} {mode} {gap:,} B of {peak:,}" for family, mode, peak, gap in gaps)
    text = (
        "27. **A training step's norms** (the Gemma 2 rows' steady peaks read 5–11% low where the forward and backward "
        "set the peak: at a3c9c80, per token and layer, 20.1–22.8 bytes × hidden in bf16, 16.0 in fp32 (three rows), "
        "17.5–20.9 under amp). `benchmarks/trace_train_cpu.py` (new) follows every storage one steady step of "
        "transformers 5.17's own model returns on the CPU — forward, backward and AdamW's step — and lists what is "
        "alive at its peak: each Gemma 2 layer has four RMSNorms (before and after attention and the MLP; the "
        "training count knew two), a norm after a block saves an fp32 copy of the block's output and the normalized "
        "input, and Gemma's RMSNorm scales by `1 + weight` in fp32 before it casts, so the normalized input it keeps "
        "for the weight's gradient is fp32 (4 bytes) where Llama's is cast back first: 20h a token and layer in "
        "bf16, 16h in fp32 and amp, the rows' own figures. The families whose RMSNorm scales in fp32 say so in their "
        "family file (`norm_scale_fp32`: Gemma 1–3, Qwen3-Next and Qwen 3.5, OLMo 2 and 3, gpt-oss), the four-norm "
        "layers (`norms_per_layer: 4`: Gemma 2 and 3, GLM-4) save their post-norms, and q/k norms (Qwen 3, Gemma 3, "
        "OLMo 2) save a norm over each projection. The same trace showed the rotary cos and sin saved once per "
        "position, shared by the batch (as item 25 found in the prefill), not once per token. Six traced steps "
        "(Gemma 2 bf16 and fp32, Qwen 3 bf16 and fp32, Gemma 3 bf16, Llama bf16; 2 layers, batch 2 × 1,024; "
        f"tests/data/measured/peak-traces/cpu-train-live-sets.jsonl) now exceed the estimate by {traced}: the fp32 "
        f"`1 + weight` each Gemma norm builds (4 bytes a weight element), the rotary module's two inverse-frequency "
        f"buffers, AdamW's step counter per parameter tensor and at most 16 bytes of scalars, {largest:,} bytes at "
        "most (tests/training/test_norm_saved_tensors.py accounts for each to the 16 bytes). Nothing here was fitted.")
    after = (
        f"Every Gemma 2 training row is now within ±5% ({len(gemma)} rows, worst "
        f"{_pct(max((p.error for p in gemma), key=abs))}); the catalog's gemma-3-1b amp step (four norms, q/k norms) "
        f"{_pct(BEFORE_GEMMA3)} → {_pct(gemma3_error())}; the reference llama-3.2-1b step moved by its rotary tables "
        "alone (−3 MiB): the measurement less the backward thread's 64 MiB of cuBLAS workspaces is now the "
        "estimate to 18,944 bytes. Median |error| of all splits: "
        f"{statistics.median(abs(p.error) for p in points(rows) if p.term == 'train steady peak'):.1%}. Measured after "
        "the rule was committed (d0b7b31), on an H100 the workplace lent for an H200, seed 12's ten training rows "
        "(`measure_random.py --train-families` adds qwen3 and gemma3_text; tests/data/measured/random-h100), steady "
        f"peak before → after: {seed12()}.")
    low, high = layer_scatter()
    host = (
        "Measured, not modelled: the host's cost of an eager layer's operations (item 26's open question, "
        "`benchmarks/measure_host_ops.py` on the same H100; tests/data/measured/h100-2026-12-06-host-ops.jsonl). "
        "Issued alone, µs a call, fp32 / bf16: "
        f"{host_ops()}. An fp32 layer's casts to fp32 return their input, and its linears and SDPA calls cost the "
        "host less than 16-bit ones — the direction the rows' fp32 / 16-bit ratios (0.83–0.87) show. But one layer's "
        f"cost per counted operation, over the bare launch probed around its case, ranged {low:.2f}× to {high:.2f}× "
        "between the cases of this one call (the same family and dtype included): the host's state moved more "
        "than the dtype does, so no per-dtype or per-family figure was shipped from it.")
    return "\n".join(["### Fifteenth pass (items 27–29): a training step's norms and autocast copies; a decode on the "
                       "math kernel", "",
                      _wrap(text, ""), "", *before_after_table(rows, BEFORE_FIFTEENTH, TARGETS), "", _wrap(after), "",
                      _wrap(MATH_DECODE.format(falcon=falcon_decodes()), ""), "",
                      _wrap(AMP_RECOMPUTE.format(catalog=amp_recompute()), ""), "", _wrap(host), ""])


if __name__ == "__main__":
    print(fifteenth_pass())
