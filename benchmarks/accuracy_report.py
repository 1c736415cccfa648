"""Write docs/accuracy.md: every measured case on the H200, predicted vs measured, error per term, summary.

    python benchmarks/accuracy_report.py [--data tests/data/measured] [--out docs/accuracy.md]

Reads every ``*.jsonl`` under ``--data`` (rows written by benchmarks/measure_h200.py and ``estimator validate
--save``) and the calibration file beside them, and predicts each row with the shipped profiles and with the
profiles calibrated on that card (``estimator calibrate``). Deterministic: the same files give the same document.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from published_training import compare as compare_published  # benchmarks/published_training.py, beside this file
from published_training import table as published_table
from random_report import section as random_section  # benchmarks/random_report.py, beside this file
from state_report import section as state_section  # benchmarks/state_report.py, beside this file
from tp_points import compare as compare_tp  # benchmarks/tp_points.py, beside this file
from training_points import predict as predict_training  # benchmarks/training_points.py, beside this file

from estimator.catalog.registry import Catalog, default_catalog
from estimator.catalog.specs import GpuSpec
from estimator.live.calibration import apply_calibration, entry_for, load_calibration
from estimator.live.validation import Point, Predictor, points, summarize
from estimator.units import format_bytes

ROOT = Path(__file__).resolve().parent.parent
# The shipped profiles were fitted on the shared reference points of these two models (specs/profiles/*.yaml).
# Models any shipped constant was fitted on (specs/profiles/*.yaml, fitted_on): judged apart from the held-out ones.
FITTED_ON = ("llama-3.2-1b", "llama-3.1-8b", "mistral-7b-v0.1")
TIME_TERMS = ("prefill_s", "decode_step_s optimized", "decode_step_s hf")

MECHANISMS = """\
## Where targets are missed, why, and what would close it

Every figure below is read off the tables above; the formula named is the one that produced the prediction.

1. **Fixed — KV cache of sliding-window models after an HF prefill** (was mistral-7b-v0.1 s8192 −50%, gemma-2-9b
   s8192 −25%). transformers 5.17's `DynamicCache` keeps the whole prompt in sliding layers after prefill and crops
   only on the next update; the `hf` profile now says so (`sliding_window_prefill_full`) and the estimate holds
   max(windowed cache at prompt + output, whole prompt in every layer). Serving engines and HF's static cache keep
   min(tokens, window) (static-cache rows within 0.1%). What remains in `kv_cache_bytes` is item 6.
2. **Fixed — prefill activation peak of MoE models** (was qwen3-30b-a3b −64%, mixtral-8x7b −26%, a constant
   ratio per model). A CUDA memory-history trace of the peak (`benchmarks/trace_moe_peak.py`, 2-layer versions of
   both models on the H200) showed transformers 5.17's grouped_mm experts replicate each token once per routed
   expert: the live set per token is max(k·(h + 4·ffn), 4·k·h) plus the router's logits and fp32 softmax
   (`memory.moe_live_bytes`), where the estimate had counted 3·k·ffn. The formula came from that trace of the
   same two architectures, so these rows confirm it on the full-depth models and other shapes but are not
   independent of it; a third MoE family would be the real test.
3. **Fixed — Gemma-2 logits with all positions** (was −50%) and **gpt2-xl** (was −45%). Gemma-2's
   `final_logit_softcapping` (logits ÷ cap → tanh → × cap) keeps a second b·s·V tensor live: the architecture now
   records soft-capping and the logits stage counts two copies. gpt2's `gelu_new` (tanh GELU written as elementwise
   PyTorch) keeps two more ffn-wide temporaries than a fused activation: counted under the `hf` profile
   (`eager_activation_temporaries`).
4. **NVML used after load for models with large vocabularies** (qwen2.5-0.5b −29%, gpt2-xl −19%, gemma-2-9b
   −10%, llama-3.2-1b −22%; 7–47B models within 1.5%). Building a model with random weights leaves
   initialisation temporaries in PyTorch's allocator cache (reserved − allocated after load: 0.29 GB for
   qwen2.5-0.5b, 1.8 GB for gemma-2-9b, whose embedding is 256,000 × 3,584), which NVML counts and a checkpoint
   load would not. The second call recorded NVML after `torch.cuda.empty_cache()` as well (gpt2-xl:
   `nvml_used_after_load` is that reading, `nvml_used_after_init` the raw one); the gap that remains on gpt2-xl
   (−19%) is cuBLAS/cuBLASLt workspaces and the warm-up's cached blocks beyond the profile's context + 98 MiB
   workspace. A per-model measurement after `empty_cache` for the small models, and a workspace term that grows
   with the number of GEMM shapes used, would close it.
5. **Prefill time** (target ±15%): within target for the dense 7–9B models at 2k and 8k tokens. Fixed:
   transformers passes sliding windows to SDPA as an explicit mask, which runs the memory-efficient kernel over
   every causal pair; the `hf` profile now has a masked-attention efficiency (0.17 of peak, fitted on
   mistral-7b-v0.1, which moved to the fitting set) and counts all causal pairs for such models: held-out
   gemma-2-9b went from −16/−24/−12% to −10/−3/−6% (item 25 under *Random architectures* gives the mask only to
   the layers whose window the prompt reaches, and refits the efficiency to 0.15 on the one such mistral row).
   Fixed since: MoE models ran 22–56% slower than predicted; transformers' grouped_mm experts are now timed as
   their grouped GEMMs and dispatch, measured alone (item 21 under *Random architectures*): 8 of 9 within target;
   and a prefill's GEMMs are timed one by one by shape and its non-vectorized elementwise kernels by their
   elements (items 23–24): 25 → 28 of 34 within target. Still
   missed: the smallest model's short prompt (qwen2.5-0.5b +38.9% at batch 1 × 2,048), set by the host (items 5,
   8 and 16 under *Random architectures*), gemma-3-1b at batch 1 × 2,048 (−28.2%) and Falcon's math-kernel
   prefill at 8,192 tokens (−17.8%; its three prefills were −19% to −31% until item 30 counted the kernel's copy
   of its probabilities back to 16 bits and timed its fp32 GEMMs by shape: −6.2%, −17.8%, −4.5%).
6. **First-case artifacts** (qwen2.5-7b KV +6 MB and static cache +28 MB on the first case; qwen3-30b-a3b,
   llama-3.2-1b and gpt2-xl static cache b1 −4 to −5%): the first call of a GEMM kind allocates a cuBLASLt
   workspace through PyTorch's allocator, counted in that case. Rows from the second call warm up first
   (`measure._warm_up`), and the llama-3.1-8b validate rows show KV and static cache exact.
7. **HF eager decode** (no target in the issue; shown for completeness). Fixed: the GQA penalty is no longer one
   number for every ratio of query to KV heads (it was `kv_read_efficiency`, 3.7% of peak, and read qwen2.5-7b,
   7:1, at −30% to −37% and gemma-2-9b, 2:1, at +69% to +80%): transformers' static cache passes SDPA a mask,
   so `repeat_kv` copies the KV heads per query head before the lean decode's own kernel reads the copies (item
   19 under *Random architectures*, measured alone): qwen2.5-7b −10.0% / −3.3%, gemma-2-9b −15.9% / −12.4%,
   qwen3-30b-a3b −17.9% / −10.6% (was −49% / −46%), the held-out median 38.0% → 22.8%. MHA llama-2-7b stays
   +20% to +42%, set by the host-dispatch floor. Still off: MoE models (mixtral −16% to −41%) loop over experts in
   Python; falcon-7b +50% at batch 1 (the host's floor); its batches of 16–64, −75% to −86% until the math kernel's
   fp32 copies of its KV head were counted, are within 10% (item 28); gpt2-xl +64% at batch 16.
8. **Lean (optimized) decode**: SDPA (`q` as b × heads × 1, `enable_gqa`; PyTorch 2.11 runs cuDNN's decode kernels
   there, item 17 below) is the faster attention on most cases; on long contexts with few KV heads that kernel has
   too few thread blocks and runs far under bandwidth; the batched-GEMM attention (flash-decoding's split over the
   context) is then faster. The summary
   takes the faster of the two per case, which is what a serving engine achieves; all 20 held-out cases are
   within ±10% with the shipped `optimized` profile. The first lean decoder (rotary and cache write as separate
   unfused kernels) ran about 2× the profile's per-layer cost; its rows were replaced by the second call's.
9. **Second run (`h200-2026-11-30-extra.jsonl`: deepseek-v2-lite, phi-3-mini, gemma-3-1b, falcon-7b, qwen3-8b,
   and training of gemma-3-1b, phi-3-mini, qwen3-8b), measured after every fix above.** qwen3-8b matched on every
   term as it came (activation ≤ 0.4%, KV exact, prefill −1.6% to −9.9%, lean decode ±1.4%), and so did all three
   training peaks (−9.2%, −0.0%, −0.0%). Its misses, and what was done:
   - *DeepSeek-V2-Lite's KV cache* was +789% because the `hf` profile assumed transformers caches decompressed
     per-head K/V (formulas.md says so of DeepSeek-V3's code); transformers 5.17's DeepSeek-V2 caches the latent.
     The profile now says latent (`decompressed_mla_cache: false`): exact. V3 under transformers is not measured.
   - *Phi-3's prefill peak* was −18% to −20%: its fused `gate_up_proj` keeps the whole 2·ffn output alive through
     the activation and product, one ffn more than separate gate and up projections. The architecture now records
     fused gate-up (`Mlp.fused_gate_up`): −2.2% and +0.1%. So phi-3-mini's activation rows are no longer
     independent of the formula, as mixtral's, qwen3-30b-a3b's, gemma-2-9b's and gpt2-xl's are not (items 2, 3).
   - *Falcon-7B's prefill peak* was −90% to −98%: transformers' Falcon always builds an explicit mask and hands
     SDPA one KV head beside 71 query heads without `enable_gqa`, so PyTorch falls back to its math kernel, which
     materialises the b × 71 × s × s scores and their softmax in fp32. The architecture now records that
     implementation fact (`Attention.unexpanded_kv_with_mask`) and the `hf` profile counts the math kernel's live
     set (`math_attention_fallback`): first 8 bytes per score (−12% to −14%), now as traced — 9 bytes per score,
     the causal bias, the scaled query and repeated values (`memory.math_attention_bytes`, *Random architectures*
     below): −0.3% to +0.1%. Falcon's prefill *time* was −75% to −93%: the math kernel's fp32 matmuls and
     score traffic were not in the time model (items 4 and 30 under *Random architectures* put them there).
   - *DeepSeek-V2-Lite's prefill peak* was −19%: a memory-history trace (2 layers) showed its router hands fp32
     weights to the experts, so the weighted output and the scattered sum of the down stage are fp32, and its shared
     experts run apart from the routed ones (not added to them); MLA's rotary tables cover only qk_rope_head_dim.
     With those (`MixtureOfExperts.fp32_routing_weights`, `memory.moe_live_bytes`): ±0.1%.
   - *The attention mask of sliding-window models*: the same trace of gemma-3-1b showed a boolean b × s × s mask
     alive through the layers (2,048 B per token at s = 2,048), which was also mistral-7b-v0.1's −6.4% at 8k; the
     `hf` prefill peak now counts it: gemma-3-1b −4.5% to +5.0%, mistral +0.0% to +2.1% (item 25 under *Random
     architectures*: it is 1 × 1 × s × s, shared by the batch, and built only once the prompt reaches the window).
   - *Still missed*: DeepSeek-V2-Lite's prefill time at batch 1 × 2,048 (−26.7%; −57% before item 21's grouped
     experts; its MLA decompression runs as separate HF kernels) and gemma-3-1b's at batch 1 × 2,048 (−28%, a 1B
     model with 5:1 local/global masks, near the host floor).
   These fixes came from traces of the same models, so their rows now confirm the mechanisms rather than test them.
"""


def load_rows(data: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(data.glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


def best_lean(pts: list[Point]) -> list[Point]:
    """Keep, per lean case, the attention variant with the shorter measured time (what an engine achieves)."""
    best: dict[tuple[str, str, str], Point] = {}
    rest = []
    for p in pts:
        if p.case.startswith("lean decode"):
            base = p.case.rsplit(" ", 1)[0] if p.case.endswith((" flash", " matmul")) else p.case
            key = (p.model, base, p.term)
            if key not in best or p.measured < best[key].measured:
                best[key] = p
        else:
            rest.append(p)
    return rest + list(best.values())


def _fmt(term: str, value: float) -> str:
    if term.endswith(("_s", "bound", " hf", " optimized")):
        return f"{value * 1e3:,.3f} ms"
    return format_bytes(value, binary=True)


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def summary_table(pts: list[Point], title: str) -> list[str]:
    lines = [f"### {title}", "", "| term | target | cases | within target | median abs error | worst case |",
             "| --- | --- | ---: | ---: | ---: | --- |"]
    for s in summarize(pts):
        worst = s.worst
        assert worst is not None
        if s.target is None and s.median_abs_error is None:  # bound
            lines.append(f"| {s.term} (never above measured) | bound ≤ measured | {s.cases} | {s.within} | — | "
                         f"{worst.model} {worst.case}: bound = {worst.predicted / worst.measured:.0%} of measured |")
            continue
        target = "—" if s.target is None else f"±{s.target:.1%}"
        median = "—" if s.median_abs_error is None else f"{s.median_abs_error:.1%}"
        lines.append(f"| {s.term} | {target} | {s.cases} | {s.within if s.target is not None else '—'} | {median} | "
                     f"{worst.model} {worst.case}: {_pct(worst.error)} |")
    return [*lines, ""]


def _calibrated(catalog: Catalog, gpu: GpuSpec, data: Path, rows: list[dict[str, Any]],
                predictor: Predictor) -> tuple[list[Point], str]:
    """The time terms predicted with the newest calibration file in ``data``, and a line naming it."""
    calibrations = sorted(data.glob("*calibration.yaml"))
    if not calibrations:
        return [], "no calibration file found"
    entry = entry_for(load_calibration(calibrations[-1]), gpu)
    if entry is None:
        return [], "no calibration file found"
    source = calibrations[-1].name
    cal = Predictor(catalog, gpu, apply_calibration(predictor.hf, entry, source),
                    apply_calibration(predictor.optimized, entry, source))
    calibrated = [p for p in best_lean(list(points(rows, cal))) if p.term in TIME_TERMS]
    return calibrated, f"`{source}`: " + ", ".join(f"{k} = {v:.4g}" for k, v in entry.profile_overrides.items())


def _intro(rows: list[dict[str, Any]], models: list[str], cal_note: str) -> list[str]:
    device = next((r for r in rows if r.get("kind") == "device"), {})
    return [
        "# Accuracy on a real H200",
        "",
        "Generated by `python benchmarks/accuracy_report.py` from `tests/data/measured/` — do not edit by hand.",
        "",
        f"Device: {device.get('name', '?')}, PyTorch {device.get('torch', '?')}, transformers "
        f"{device.get('transformers', '?')}, CUDA {device.get('cuda_runtime', '?')}. Models are built from their "
        "catalog config.json with random bf16 weights on the GPU (no download). Measured with (three device calls, "
        "see `tests/data/measured/README.md`): `estimator gpu`, `estimator calibrate`, `estimator "
        "validate --model llama-3.1-8b --batch 1 --prompt-tokens 2048 --save …`, "
        "`python benchmarks/measure_h200.py --out $OUT`, and later `… --set extra` for five more families.",
        "",
        f"Models measured: {', '.join(models)}. Predictions use the catalog's NVIDIA H200 SXM 141GB and the shipped "
        "profiles: `hf` for load, prefill and Hugging Face decode, `optimized` for the lean CUDA-graph decode.",
        "",
        "**Fitting.** The shipped profiles were fitted on the shared reference points of llama-3.2-1b and "
        "llama-3.1-8b, and the `hf` profile's masked-attention efficiency on mistral-7b-v0.1's prefills here "
        f"(specs/profiles/*.yaml, `fitted_on`). Those {len(FITTED_ON)} models are listed apart below; the targets "
        "are judged on "
        f"the other {len(models) - len(FITTED_ON)} models (held out). The calibrated rows apply the calibration "
        f"measured on this card by `estimator calibrate` ({cal_note}); a profile's matmul share is scaled by the "
        "file's reading ÷ the profile's `matmul_reference_efficiency`, not replaced by it.",
        "",
    ]


def _summary(pts: list[Point], calibrated_pts: list[Point]) -> list[str]:
    return [
        "## Summary against the issue's targets",
        "",
        *summary_table([p for p in pts if p.model not in FITTED_ON], "Held-out models, shipped profiles"),
        *summary_table([p for p in calibrated_pts if p.model not in FITTED_ON],
                       "Held-out models, time terms with the profile calibrated on this card"),
        *summary_table([p for p in pts if p.model in FITTED_ON],
                       f"Fitting models ({', '.join(FITTED_ON)}), shipped profiles"),
        "Targets: weights ±0.5%, KV cache ±1%, NVML used after load ±3%, prefill activation peak ±10%, "
        "training steady-state peak ±10%, optimized decode ±10%, prefill ±15%; bounds never above a measurement. "
        "`decode_step_s hf` and `nvml_used_after_init` have no target.",
        "",
        MECHANISMS,
    ]


def _every_case(pts: list[Point]) -> list[str]:
    out = [
        "## Every case",
        "",
        "Error = (predicted − measured) ÷ measured. ✓ within target, ✗ outside; bound rows pass when the bound is "
        "not above the measurement. Lean decode rows keep the faster attention variant per case.",
        "",
        "| model | case | term | predicted | measured | error | target | |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for p in sorted(pts, key=lambda q: (q.model, q.case, q.term)):
        target = "≤ measured" if p.kind == "bound" else "—" if p.target is None else f"±{p.target:.1%}"
        mark = "" if p.ok is None else "✓" if p.ok else "✗"
        fit = " (fit)" if p.model in FITTED_ON else ""
        out.append(f"| {p.model}{fit} | {p.case} | {p.term} | {_fmt(p.term, p.predicted)} | "
                   f"{_fmt(p.term, p.measured)} | {_pct(p.error)} | {target} | {mark} |")
    return out


def _training(rows: list[dict[str, Any]]) -> list[str]:
    train_rows = [r for r in rows if r.get("kind") == "train" and not r.get("error")]
    train_errors: list[float] = []
    table: list[str] = []
    for r in train_rows:
        report = predict_training(r, "h200")
        peak = report.memory.peak_tensor_bytes
        error = (peak - r["steady_peak"]) / r["steady_peak"]
        step_error = (report.time.step_s - r["latency"]["median_s"]) / r["latency"]["median_s"]
        train_errors.append(error)
        table.append(f"| {r['model']} | {r['mode']} | {r['batch']} × {r['seq']} | {r['checkpointing']} | "
                     f"{format_bytes(peak, binary=True)} | {format_bytes(r['steady_peak'], binary=True)} | "
                     f"{_pct(error)} | {'✓' if abs(error) <= 0.10 else '✗'} | {report.time.step_s * 1e3:,.0f} ms | "
                     f"{r['latency']['median_s'] * 1e3:,.0f} ms | {_pct(step_error)} |")
    within = sum(abs(e) <= 0.10 for e in train_errors)
    return ["", "## Training steps: steady-state peak (target ±10%) and step time (no target)", "",
            "AdamW (PyTorch default foreach), HF transformers, sdpa, `hf` profile. Measured `steady_peak` = peak of a "
            "steady-state step minus allocated before the model was built (the reference `kind=train` row); "
            "predicted = the training estimator's peak of tensors (`memory.peak_tensor_bytes`; runtime overhead is "
            "outside torch's count). `python benchmarks/training_points.py tests/data/measured/*.jsonl` prints each "
            "term. The `hf` training FLOP efficiency was fitted on the shared reference step (llama-3.2-1b amp, "
            "no checkpointing); every row here is a separate measurement.", "",
            f"Within ±10%: {within} of {len(train_errors)}; worst "
            f"{_pct(max(train_errors, key=abs)) if train_errors else '—'}.", "",
            "| model | mode | batch × seq | checkpointing | predicted peak | measured peak | error | | predicted step "
            "| measured step | step error |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |", *table]


def _tensor_parallel(tp_file: Path) -> list[str]:
    out = ["", f"## Tensor parallel on several H200s (`{tp_file.name}`)", "",
           "`benchmarks/measure_tp.py` under torchrun: a Megatron-style tensor-parallel Llama (column-parallel "
           "qkv and gate_up, row-parallel o and down with an NCCL all-reduce each, vocabulary-parallel embedding "
           "and head), random bf16 weights, static KV cache sharded by KV heads, flash SDPA, CUDA-graph decode; "
           "predictions are `estimate --gpus N` with the `optimized` profile. The all-reduce latency (16 µs) "
           "was fitted on the llama-3.1-8b TP 2 rows; llama-3.1-70b is held out. Machines with 4 or 8 GPUs were "
           "not lent, so TP 4 and 8 are not measured.", "",
           "| case | term | predicted | measured | error |", "| --- | --- | ---: | ---: | ---: |"]
    for case, term, predicted, measured in compare_tp(tp_file):
        timed = "decode" in term or "prefill" in term
        shown = ((f"{predicted * 1e3:,.2f} ms", f"{measured * 1e3:,.2f} ms") if timed
                 else (format_bytes(predicted, binary=True), format_bytes(measured, binary=True)))
        label, error = term, _pct((predicted - measured) / measured)
        if "bound" in term:
            label, error = term.replace("<= measured", "≤ measured"), "✓" if predicted <= measured else "✗"
        out.append(f"| {case} | {label} | {shown[0]} | {shown[1]} | {error} |")
    return out


def _published_training(catalog: Catalog) -> list[str]:
    rows = compare_published(catalog)
    asserted = [r for r in rows if r.reproduced]
    within = sum(abs(r.error) <= 0.15 for r in asserted)
    out = ["", "## Published multi-node training (`tests/data/published/training.yaml`)", "",
           "Throughput of published Megatron-LM runs on DGX A100 clusters (32 to 1,024 GPUs, InfiniBand between "
           "nodes) and of MosaicML's llm-foundry runs on H100 clusters (8 to 64 GPUs, PyTorch FSDP full shard, "
           "flash attention), predicted by `estimate --mode train` with the `megatron` profile: each pass timed "
           "kernel by kernel with the kernel figures measured on the H200 (none fitted on a training step), the "
           "1F1B bubble, and TP, PP and DP traffic over the link each group crosses (`hgx-a100`, `hgx-h100`; a DP "
           "group with several ranks in each node as NCCL's ring over rails, NVLink and each GPU's NIC busy at once, "
           "the slower setting the time; FSDP's three collectives once per micro-batch), none of it behind compute "
           "(the profile's `train_overlap_*` fractions are 0: Megatron-LM's overlap flags are off by default). "
           f"{within} of {len(asserted)} asserted cases are within the 15 % target "
           "(`tests/training/test_published_training.py`); `python benchmarks/published_training.py` prints "
           "this table.", "",
           "Sources:", "",
           "- Narayanan et al. 2021, \"Efficient Large-Scale Language Model Training on GPU Clusters Using "
           "Megatron-LM\", SC'21, Table 1 (https://arxiv.org/abs/2104.04473).",
           "- NVIDIA/Megatron-LM README, \"GPT-3 Example\", commit 152aab3 (2021-01-11), with "
           "examples/pretrain_gpt3_175B.sh at that commit "
           "(https://github.com/NVIDIA/Megatron-LM/blob/152aab304d4eabe4f992def6296156642e11c28d/README.md).",
           "- MosaicML llm-foundry, scripts/train/benchmarking/README.md, table \"H100 80GB BF16\" (tokens/s/GPU as "
           "stated there), model shapes from scripts/train/yamls/pretrain/mpt-*.yaml "
           "(https://github.com/mosaicml/llm-foundry/blob/main/scripts/train/benchmarking/README.md).",
           "- NVIDIA NeMo, docs/source/performance/performance_summary.md, FP8 pretraining on DGX-H100 (NeMo 24.07), "
           "commit 070a0bb (https://github.com/NVIDIA/NeMo/blob/070a0bb168d405d653b9734c0017cf5078e77c0d/docs/"
           "source/performance/performance_summary.md): `--precision fp8`, not asserted.",
           "- NVIDIA-NeMo/Megatron-Bridge, docs/performance-summary.md, 26.02 container, DGX-H100 pre-training, "
           "commit df0289c (https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/df0289c180dd20ff26933455c7a0a11084f6a"
           "36f/docs/performance-summary.md): a mixture-of-experts run with expert parallel (`--ep`), not asserted.",
           "",
           *published_table(rows), ""]
    out += [f"- {r.name}: not asserted — {r.why}" for r in rows if not r.reproduced]
    prefetch = [r.error for r in compare_published(catalog, profile_update={"train_overlap_gather": 1.0,
                                                                            "train_overlap_dp": 1.0})
                if r.reproduced and r.source == "mosaicml_llm_foundry"]
    out += [f"- FSDP prefetches the next unit's all-gather and reduce-scatters behind the backward (Zhao et al. "
            f"2023, \"PyTorch FSDP\", arXiv 2304.11277 §3.3). Counted as hiding all it can (`train_overlap_gather` "
            f"and `train_overlap_dp` 1), the llm-foundry rows read {min(prefetch):+.0%} to {max(prefetch):+.0%}: "
            "the published rates show less hiding than that, so no overlap is counted for them."]
    step_level = [r.error for r in compare_published(catalog, "optimized") if r.reproduced]
    out += [f"- The step-level `optimized` profile (train_flop_efficiency 0.41, the Llama 3 paper's whole-step "
            f"MFU) gives {min(step_level):+.0%} to {max(step_level):+.0%} on the same cases: a whole-step MFU "
            "used as the compute rate charges the bubble and communication a second time.",
            "- Not reproduced: Llama 3 405B (Dubey et al. 2024, \"The Llama 3 Herd of Models\", Table 4: TP 8, "
            "PP 16, 8,192–16,384 H100s, 38–43 % MFU). Its 126 layers now split as the report describes (7 + 8 × "
            "14 + 7: one fewer on the first and last stage, beside the embedding and the output layer; "
            "`training.pipeline`), but the table does not give the schedule's virtual stages, on which the bubble "
            "depends at 16–32 micro-batches per pipeline.",
            "- Pipeline stages: the busiest stage sets the step (its layers, and the output layer on the last), "
            "not the average stage: the PP rows above include that imbalance."]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "tests" / "data" / "measured")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "accuracy.md")
    args = parser.parse_args()
    catalog = default_catalog()
    gpu = catalog.gpus.get("h200")
    rows = load_rows(args.data)
    predictor = Predictor.default(catalog, gpu)
    pts = best_lean(list(points(rows, predictor)))
    calibrated_pts, cal_note = _calibrated(catalog, gpu, args.data, rows, predictor)
    out = [*_intro(rows, sorted({p.model for p in pts}), cal_note), *_summary(pts, calibrated_pts),
           *_every_case(pts), *_training(rows)]
    for tp_file in sorted(args.data.glob("*tp.jsonl")):
        out += _tensor_parallel(tp_file)
    out += _published_training(catalog)
    if (args.data / "random").is_dir():
        out += ["", *random_section(args.data / "random")]
    if (args.data / "state").is_dir():
        out += ["", *state_section(args.data / "state")]
    failures = [r for r in rows if r.get("error")]
    if failures:
        out += ["", "## Cases that failed", ""]
        out += [f"- {r.get('model')} {r.get('phase', r['kind'])}: {r['error']}" for r in failures]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(pts)} comparisons, {len(rows)} rows)")


if __name__ == "__main__":
    main()
