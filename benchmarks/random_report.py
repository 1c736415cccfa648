"""The section of docs/accuracy.md on randomly generated architectures (benchmarks/measure_random.py), written by
benchmarks/accuracy_report.py: the targets of issue 15 per term, fitted and held-out cases apart, against the
figures the same measurements gave before the mechanisms below were modelled, and one paragraph per mechanism."""

from __future__ import annotations

from pathlib import Path

# benchmarks/random_points.py, beside this file
from random_eighteenth import eighteenth_pass
from random_eighth import eighth_pass
from random_eleventh import eleventh_pass
from random_fifteenth import fifteenth_pass
from random_fifth import BEFORE_FIFTH, FIFTH_PASS
from random_fourteenth import fourteenth_pass
from random_fourth import BEFORE_FOURTH, FOURTH_PASS
from random_nineteenth import nineteenth_pass
from random_ninth import ninth_pass
from random_points import DATA, TARGETS, bound_summary, load, points, summary
from random_seventeenth import seventeenth_pass
from random_seventh import seventh_pass
from random_sixteenth import sixteenth_pass
from random_sixth import sixth_pass
from random_tenth import tenth_pass
from random_thirteenth import thirteenth_pass
from random_twelfth import twelfth_pass
from random_twentieth import twentieth_pass

# `python benchmarks/random_points.py` at commit 4f34dec (before issue 15's mechanisms), on the same files:
# term -> split -> (cases, within target, median |error|, worst error and its case).
BEFORE: dict[str, dict[str, tuple[int, int, float, str]]] = {
    "prefill activation": {"fit": (44, 31, 0.010, "−34.6% (s0/rand-i03 fp32 b1 s2048)"),
                           "held-out": (136, 89, 0.014, "−90.5% (s1/rand-i21 fp32 b1 s4096)")},
    "train steady peak": {"fit": (10, 9, 0.002, "−12.1% (s0/rand-t15 amp b1 s4096)"),
                          "held-out": (35, 32, 0.003, "−20.6% (s1/rand-t11 fp32 b4 s512 ckpt)")},
    "train step": {"fit": (10, 2, 0.397, "+116.8% (s0/rand-t11 fp32 b8 s256 ckpt)"),
                   "held-out": (35, 8, 0.645, "+125.7% (s1/rand-t23 fp32 b2 s1024 ckpt)")},
    "prefill_s": {"fit": (33, 7, 0.215, "+135.5% (s0/rand-i04 fp16 b1 s128)"),
                  "held-out": (102, 45, 0.169, "+73.9% (s1/rand-i14 bf16 b1 s512)")},
    "decode hf": {"fit": (22, 14, 0.189, "+82.6% (s0/rand-i04 fp16 b32 ctx1024)"),
                  "held-out": (68, 51, 0.215, "+123.5% (s1/rand-i24 fp32 b1 ctx2048)")},
    "decode optimized": {"fit": (6, 4, 0.047, "−15.4% (s0/rand-i05 bf16 b16 ctx4096)"),
                         "held-out": (24, 21, 0.043, "−32.4% (s1/rand-i05 bf16 b16 ctx4096)")},
}

# The same at commit 2172808 (after the first pass of mechanisms, before the second), seed 3 as `fresh`; no hf-graph
# profile existed then.
BEFORE_SECOND: dict[str, dict[str, tuple[int, int, float, str]]] = {
    "prefill activation": {"fit": (44, 33, 0.010, "−13.1% (s0/rand-i14 b1 s2048 logits=last)"),
                           "held-out": (136, 104, 0.005, "−22.4% (s0/rand-i10 b1 s128 logits=last)"),
                           "fresh": (120, 91, 0.006, "−20.5% (s3/rand-i18 b1 s128 logits=last)")},
    "train steady peak": {"fit": (10, 10, 0.002, "−2.7% (s0/rand-t15 amp b1 s4096)"),
                          "held-out": (35, 34, 0.003, "−7.4% (s1/rand-t19 bf16 b8 s256)"),
                          "fresh": (25, 24, 0.002, "−10.4% (s3/rand-t19 bf16 b1 s4096)")},
    "train step": {"fit": (10, 6, 0.118, "+43.0% (s0/rand-t10 bf16 b4 s512)"),
                   "held-out": (35, 20, 0.111, "+36.8% (s1/rand-t12 amp b2 s1024 ckpt)"),
                   "fresh": (25, 19, 0.095, "−47.0% (s3/rand-t14 fp32 b1 s4096)")},
    "prefill_s": {"fit": (33, 12, 0.174, "+48.7% (s0/rand-i04 b1 s128 logits=last)"),
                  "held-out": (102, 49, 0.157, "−57.2% (s1/rand-i21 b1 s4096 logits=last)"),
                  "fresh": (90, 45, 0.147, "+50.4% (s3/rand-i23 b1 s512 logits=last)")},
    "decode hf": {"fit": (22, 18, 0.151, "+79.4% (s0/rand-i03 b1 ctx2048)"),
                  "held-out": (68, 51, 0.224, "+68.3% (s1/rand-i12 b1 ctx2048)"),
                  "fresh": (60, 38, 0.242, "+99.6% (s3/rand-i18 b32 ctx1024)")},
    "decode optimized": {"fit": (6, 4, 0.047, "−15.4% (s0/rand-i05 b16 ctx4096)"),
                         "held-out": (24, 21, 0.043, "−32.4% (s1/rand-i05 b16 ctx4096)"),
                         "fresh": (20, 15, 0.041, "−33.0% (s3/rand-i20 b16 ctx4096)")},
}

INTRO = """\
## Random architectures (issue 15)

`benchmarks/measure_random.py` draws architectures from a seed — llama, qwen2, mistral, gemma2 and gpt2 families,
random widths, head counts, grouped-query ratios (MHA to MQA) and explicit head_dim, fp32, fp16 or bf16 — builds
each with random weights on the H200 and measures prefill (peak and time, SDPA as transformers picks it), HF
eager decode, lean CUDA-graph decode and training steps (AdamW; amp, bf16 and fp32; checkpointing on and off;
several batch × sequence shapes, 0.05–8.8 B parameters, 5,120-wide models cut in depth to fit). Three calls
(`tests/data/measured/README.md` has the commands): seed 0 (20 inference + 20 training architectures), seed 1 (25
+ 25) and seed 2 (30 small models: host issue time beside GPU time, training split into forward, backward and
optimizer step). **Split**: seed 0 marks each architecture `fit` or `held-out` (drawn from the seed); mechanisms
were derived from the `fit` rows of seed 0, seed 2 and the SDPA kernel probe only; every seed-1 row is held out.
Seed 3 (`fresh`: 30 inference + 25 training architectures drawn by the same code, one call of a later device
session) was measured before the second pass of mechanisms (items 4–7 below) was written; those mechanisms were
derived from seeds 0–2 alone, and seed 3 is judged apart. Its rows also carry the host's speed before and after
each case and the host issue time beside the GPU time (`host_probe`, `issue`).
Seed 4 (24 inference architectures, of which 22 ran inside the budget, and 18 training ones, another device
session) was measured after the second pass, in a call that ran `estimator calibrate` first, as a user would
(`benchmarks/measure_calibrated.sh`); no constant was set from it. It is judged twice: `seed 4` with the shipped
profiles, `seed 4 cal` with that call's calibration file applied to them — every override it derives, the host's
cost per operation included (item 8) — which is what `estimate` gives a user who ran `calibrate` on that machine.
Seed 5 (22 + 16 architectures, a fourth device session, `calibrate` first) adds the kernels' busy time beside the
wall time; its `fit` rows join `fit` and shaped the fourth pass, its held-out rows are `seed 5` and `seed 5 cal`.
Seed 6 (16 inference and 15 training architectures ran inside the budget, of 20 and 16 drawn; the same device
session as seed 5, `calibrate` first) was measured after the fourth pass and items 14–15 had landed; no constant
was set from it and every row is held out (`seed 6`, `seed 6 cal`). Its call's `calibrate` read 21.67 µs per
transformers operation at the start (16.45 at the end) where the `hf` profile shipped 16.94: a slow phase of the
host, which is why its shipped HF decode median is the worst of all splits and the calibrated one much better.
Seed 7 (`seed 7`: lean decodes only, 30 architectures × 5 batch × context shapes, `measure_random.py --lean`) was
measured after item 17's kernel tiles were set, to judge them; nothing was fitted on it.
Seed 8 (`seed 8`: 30 training architectures, `measure_random.py --inference 0 --train 30`, another device session) was
measured after item 22's operation count was committed, to judge it; nothing was fitted on it.
Seed 9 (`seed 9`: 24 inference architectures, load and prefill only, `measure_random.py --prefill-only`, another device
session) was measured before item 23's GEMM rule was written and read after it was committed; seed 10 (`seed 10`: 30
more, the same way, a later call) was measured after items 23–24 were committed (e8ad999). Nothing was fitted on either.
Seed 11 (`seed 11`: 30 more, the same way, another device session) was measured after item 25's first three rules were
committed (f72d19e); its rows also carry the bytes the tensors requested (`prefill requested`: the same prediction
against `requested_bytes`, before the caching allocator's blocks). Nothing was fitted on it.
`python benchmarks/random_points.py --cases` prints every case (`--calibration host` applies only the host cost).
"""


def _row(term: str, split: str, cases: int, within: int, median: float, worst: str) -> str:
    return f"| {term} | ±{TARGETS[term]:.0%} | {split} | {cases} | {within} | {median:.1%} | {worst} |"


def section(data: Path = DATA) -> list[str]:
    pts = points(load(sorted(data.glob("*.jsonl"))))
    out = [INTRO, "| term | target | split | cases | within target | median abs error | worst case |",
           "| --- | --- | --- | ---: | ---: | ---: | --- |"]
    for term, split, cases, within, median, worst in summary(pts):
        out.append(_row(term, split, cases, within, median,
                        f"{worst.error:+.1%}".replace("-", "−") + f" ({worst.model} {worst.case})"))
    out += ["", "Bounds (datasheet peaks, no profile; the same with or without a calibration), against every measured "
            "time of their case:", "", "| bound | split | cases | bound ≤ measured | closest to its measurement |",
            "| --- | --- | ---: | ---: | --- |"]
    out += [f"| {term} | {split} | {n} | {below} | {p.predicted / p.measured:.1%} of measured ({p.model} {p.case}) |"
            for term, split, n, below, p in bound_summary(pts) if not split.endswith(" cal")]
    for title, before in (("Before the fifth pass (items 14–15; the shipped model at commit 0ce9aeb, the same rows; "
                           "only the term it changed):", BEFORE_FIFTH),
                          ("Before the fourth pass (items 11–13; the shipped model at commit 8aa4829, the same rows; "
                           "only the terms it changed):", BEFORE_FOURTH),
                          ("Before the second pass (items 4–7; the shipped model at commit 2172808, the same rows):",
                           BEFORE_SECOND),
                          ("Before any of these mechanisms (commit 4f34dec; seeds 0–2):", BEFORE)):
        out += ["", title, "", "| term | target | split | cases | within target | median abs error | worst case |",
                "| --- | --- | --- | ---: | ---: | ---: | --- |"]
        for term, splits in before.items():
            for split, (cases, within, median, worst) in splits.items():
                out.append(_row(term, split, cases, within, median, worst))
    passes = [MECHANISMS, SECOND_PASS, THIRD_PASS, FOURTH_PASS, FIFTH_PASS, sixth_pass(data), seventh_pass(data),
              eighth_pass(data), ninth_pass(data), tenth_pass(), eleventh_pass(data),
              twelfth_pass(data), thirteenth_pass(data), fourteenth_pass(data), fifteenth_pass(data),
              sixteenth_pass(data), seventeenth_pass(data), eighteenth_pass(), nineteenth_pass(data),
              twentieth_pass(data)]
    return [*out, "", *passes]


MECHANISMS = """\
### Mechanisms

1. **fp32 attention runs PyTorch's math kernel** (prefill peaks were 33–91% low in fp32 with grouped-query
   attention). The SDPA probe (`kind=sdpa_probe`, PyTorch 2.11 on the H200) shows which kernels accept each case:
   fp32 with 8 of 8 KV heads runs `efficient` (and math), fp32 with 2 of 8 only `math`; fp16 and bf16 run `flash`
   for every head_dim from 64 to 256, grouped or not. transformers 5.17 calls SDPA with `enable_gqa=True` when it
   has no mask (`use_gqa_in_sdpa`), so an fp32 GQA prefill materialises its scores. A TorchDispatchMode trace of
   the math kernel gives its live set at the peak (inside `_safe_softmax`): the scores plus causal bias, the
   softmax and its boolean all-−inf test (9 bytes per score), the fp32 s × s causal bias, the scaled query and
   the repeated values — 1,232 MiB for 8 heads, 4,096 tokens, head_dim 64, exactly what the probe allocated
   (`memory.math_attention_bytes`, `runs_math_attention`). Falcon's math-kernel case (item 9 above) now uses
   the same count. In training the math kernel saves the scaled query, repeated keys and values and the fp32
   probabilities (`training.estimate._activations`), and Gemma 2's final-logit soft-capping saves its tanh output
   (`activations.output_stage`; it was the −12% fitted miss s0/rand-t15).
2. **Training step time: host floor, loss stage and foreach AdamW** (median error 64.5% held out; small models
   up to 86% too fast, fp32 steps 2× too slow). Seed 2 timed forward, backward and optimizer step apart, each
   with the host's issue time beside the GPU time: models under ~1 B parameters are host-bound (the host needs
   1.4 ms a layer to issue a forward and 3.4 ms a backward; 2.6 and 6.5 ms with checkpointing, whose backward
   re-runs the layer through saved-tensor hooks), so each phase now takes the longer of the two
   (`training.eager_step`, the `hf` profile's `train_host_*`). The GPU side: matrix FLOPs at 0.45 of the bf16
   peak (0.74 of the fp32 peak: fp32 has no tensor cores, and one step-level factor had made fp32 2× slow), the
   loss stage's bytes (24 per logit forward, 26 backward, counted op by op; +12 / +14 with soft-capping),
   autocast's weight casts (6 B per parameter), and recompute without the LM head. PyTorch's foreach AdamW
   (traced: 8 kernels, 21 state accesses per parameter) measured 23 ps a parameter with fp32 states and 14 with
   bf16 — more than its bytes at any bandwidth (the old term read and wrote each state once, a third of it):
   its bytes at 4.8 TB/s plus 0.67 ps per element per kernel. Host figures were fitted on seed 2 (all `fit`),
   the 16-bit efficiency on seed 0's 10 fit rows; held out, the median error went from 64.5% to 11.1% (20 of
   35 within ±15%); the worst remaining misses are small checkpointed models whose host time varies ±50%
   between models of one shape (seed 2's per-layer host figures scatter 0.9–2.4 ms forward), which a per-layer
   constant cannot follow, and the target (±15%, median ≤ 8%) is not met.
3. **Host dispatch counted in operations** (the `hf` profile gave every 32-layer model the same host-bound step:
   layers × 0.966 ms). The runs counted the aten operations one layer dispatches under transformers 5.17
   (TorchDispatchMode, `prefill_ops` / `decode_ops`): llama, qwen2 and mistral 52 in prefill, 57 in decode, 63 with
   grouped KV heads (repeat_kv); gemma2 76 / 81 / 87; gpt2 36 / 41. The host time is now those operations × 16.9
   µs (least squares on seed 0's host-bound fit rows; seed 2's small models, another device start, give 16.4 µs)
   for the families counted (`hf` profile `eager_ops_per_layer`, `timing.host_dispatch_s`); others keep the
   per-layer figure. Held out: prefill time median 16.9% → 15.7% (45 → 49 of 102 within ±15%), HF decode worst
   +123% → +68% but median 21.5% → 22.4% (51 of 68 within ±30% either way): the host's cost per operation
   scatters ±20–50% between models of one family in one session, more than the mechanism removes, so the
   targets (prefill median ≤ 7%, decode median ≤ 15%) are not met. Not modelled: the math kernel's fp32 time
   (fp32 grouped-query prefills are up to −57%), and a CUDA-graph `hf` profile (the rows carry `graph`
   timings for it; no profile was fitted).
"""

SECOND_PASS = """\
### Second pass (items 4–7): fp32 kernels, the host's speed, CUDA graphs

Derived from seeds 0–2 (constants fitted on seed 0's `fit` rows only, as named); judged on seeds 0–1's held-out
rows and on the fresh seed 3, whose figures before and after are in the tables above.

4. **fp32 GEMMs and the SDPA kernel each dtype reaches** (fp32 prefills: math-kernel cases up to −57% low, masked
   fp32 up to +46% high, the fp32 GEMMs of large batches 15–20% high; Falcon's bf16 prefill, whose unexpanded KV
   heads with a mask also leave SDPA only the math kernel, −75% to −92%). Three terms, in `timing.phase_time` and
   `phases.prefill_cost`: fp32 GEMMs run on CUDA cores at 0.74 of the fp32 peak (`fp32_matmul_flop_efficiency`,
   the figure the fp32 training GEMMs measured on seed 2, not fitted again; the 16-bit 0.65 had been applied to
   them); where the math kernel runs (`runs_math_attention`, the rule the peak already used) its QKᵀ and PV
   GEMMs cover every pair of every head, in fp32 whatever the model's dtype (PyTorch ≥ 2.5 upcasts half inputs),
   and it makes 38 bytes of passes per score — the scores' write, the causal bias add, `_safe_softmax` (softmax,
   the −inf test, its row reduction and `where`) and PV's read, counted from PyTorch's source
   (`compute.MATH_SDPA_PASS_BYTES_PER_SCORE`); and other fp32 attention runs the memory-efficient kernel on CUDA
   cores at 0.40 of the fp32 peak, masked or not (`fp32_attention_flop_efficiency`, grid search on seed 0's 12
   fit fp32 prefills). fp32 prefill time, before → after: fit (12) median 16.6% → 10.5%, worst +46.4% → +29.9%;
   held out (27) 10.8% → 10.5%, worst −57.2% → −37.2%; fresh seed 3 (30) 16 → 20 within ±15%, median 14.0% →
   11.7%, worst −45.1% → −31.7% (now a host-bound case). falcon-7b, on the catalog tables above: −75.0 / −92.3 /
   −74.8% → −18.2 / −30.6 / −16.4% (the s = 8,192 case stays low; not explained here). The held-out catalog
   prefill median went from 20.1% to 17.3%. Across all random prefills the median barely moves (held out 15.7%
   → 15.7%, fresh 14.7% → 13.9%): most rows are host-bound, which item 5 explains.
5. **The host's speed is a state of the machine, not of the model** (why one cost per operation leaves ±25%).
   Seed 3 timed 300 in-place adds on a one-element GPU tensor before and after every case (`host_probe`): of 292
   probes, 140 read 7.3 µs per operation (median) and 152 read 10.4 µs, nothing between — the device's host
   switches between two speeds, 1.43× apart, from one case to the next and back (its vCPUs are shared). The 93
   host-bound cases (host issue time ≥ 0.9 × GPU time, `issue`) dispatched at 11.3–21.8 µs per counted
   operation (10th–90th percentile; median 15.8): the shipped 16.94 µs gives a median error of 24.0% (29 of 93
   within ±15%). Split by model (even-numbered architectures to fit, odd ones to test): one constant per
   operation leaves 27.1% median error (15 of 49 within ±15%), the probe's speed at that moment × 1.90 leaves
   17.2% (21 of 49; worst 59% → 54%). So the host floor is operations × the host's current cost per operation, and
   the prefill (≤ 7%) and HF decode (≤ 15%) medians are out of reach of any shipped constant on this machine: they
   need that cost measured on the machine that runs the job (`estimator calibrate` does not yet measure it), and
   even then the speed can change within a case.
6. **A CUDA-graph `hf` profile** (`hf-graph`: the decode step captured in a graph, as a static cache with
   `torch.cuda.graph` or a compiled static-cache `generate` runs it). The graph removes the host, so the step is
   the `hf` profile's GPU terms plus a GPU cost per operation the host would have dispatched: a small kernel's
   launch and tail, which the graph keeps (`gpu_per_op_s`). Graph time − the `hf` GPU terms over seed 0's 14 fit
   16-bit architectures: 1.24 µs per counted operation (median; 0.6–1.6 µs). 16-bit graph decodes: held out 8.5%
   median (42 of 50 within ±30%), fresh seed 3 13.3% (34 of 40), against 23.4% and 25.3% for the eager `hf`
   profile on the same steps; the worst (+65%, +78%) are batch-32 grouped-query steps, where the eager
   `kv_read_efficiency` (repeat_kv copies) overstates what the graph's kernels take. fp32 graph decodes are 37–51%
   off (median): each fp32 step spends 2–15 µs per operation beyond the terms, growing with batch × context —
   the memory-efficient kernel's fp32 attention over the cache with one query per sequence, not modelled.

7. **The math kernel in an eager training step** (fp32 grouped-query steps all low; fresh s3/rand-t14 −47%).
   Where the math kernel runs, the step now takes its GEMMs over every pair in fp32 (forward QKᵀ and PV, backward
   twice that, at `train_fp32_flop_efficiency`) and its passes over the scores — 38 bytes forward as in item 4,
   36 backward from the autograd formulas (PV's and `where`'s backward, softmax backward, the Q and K gradients'
   reads) — instead of the fused kernel's causal FLOPs; checkpointing re-runs the forward
   (`eager_step.math_attention_s`). Train step time, before → after: held out (35) median 11.1% → 10.2%, 20 → 23
   within ±15%; fresh (25) 9.5% → 8.9%, 19 → 20 within, worst −47.0% → +29.8% (s3/rand-t14 now −17.2%); fit
   unchanged. The target (median ≤ 8%, all within ±15%) is still missed: the worst rows are small checkpointed
   or 16-bit models near the host floor, whose host speed item 5 shows to be the machine's state.

Left by this pass: the host's cost per operation measured by `estimator calibrate` (item 5), fp32 graph decode
attention, grouped-query KV reads at large batch under a graph, and Falcon's 8k prefill.
"""

THIRD_PASS = """\
### Third pass (item 8): the host's cost per operation, measured by `calibrate`

8. **`estimator calibrate` measures the host's cost per operation** (item 5: the host's speed is the machine's
   state, so no shipped constant can follow it). `estimator.live.host_cost` times two things, each from an idle
   GPU: 300 in-place adds on a one-element tensor (the probe of item 5, `host_bare_op_s`), and the marginal host
   issue time per aten operation of a transformers Llama layer — a 10-layer and a 2-layer model of width 64,
   prefill and static-cache decode, the difference of their issue times over the difference of the operations
   they dispatch (counted as `eager_ops_per_layer` were). That second figure is what the `hf` profile's
   `host_per_op_s` means, so the calibration file carries it (`host_per_op_s`) and `apply_calibration` puts it in
   place of the shipped 16.94 µs; the profile's other host figures (per layer, per training phase, per optimizer
   step and tensor) were measured on another session's host and scale by the same ratio. Profiles without a host
   floor counted in operations (`hf-graph`, `optimized`, `megatron`) keep none. Nothing was fitted: the figure is
   measured at calibration time. Seed 4's call measured 14.85 µs per operation (bare add 10.68 µs) at its start
   and 12.41 µs (7.98) when `calibrate` ran again at its end (`…-seed4-calibration-end.yaml`): the host changed
   speed within one call, as item 5 found.
   Held out (seed 4), shipped → calibrated in the same call (the table above; `--calibration host` gives the host
   cost alone): HF eager decode median 22.8% → 17.3% (host cost alone: the same 17.3%; within ±30% 30 → 27 of 44,
   worst +66.0% → −48.4%); training step 11.9% → 10.1% (host alone 10.0%; worst +52.1% → +34.4%, 12 of 18 within
   ±15% both ways); prefill time 13.9% → 14.5% (host alone 14.8%, 36 → 34 of 66 within ±15%). The calibration's
   `matmul_flop_efficiency` is one 8192³ GEMM's share of the peak (0.75); until the profiles stated
   `matmul_reference_efficiency` it replaced the `hf` profile's 0.65, the share transformers' smaller GEMMs
   reach, and made every GPU-bound prefill faster: this median read 18.3% and the catalog table's 19.1%. A
   calibration now scales the profile's 0.65 by the card's reading ÷ the reading on the card the profile was
   fitted on (0.755, `h200-2026-11-30-calibration.yaml`): 14.5% here, 16.0% in the catalog table. The prefill still
   gains nothing from calibration, for a reason the rows show: on this host the prefills' GPU time, read from the
   same rows' `issue` (host issue time beside GPU time), is predicted 10–40% low wherever the host issue time is
   more than half the GPU time: with host and GPU that close, kernels are issued late and the GPU idles between
   them, so the phase takes more than max(host, GPU), which the
   time model takes. A model of that overlap (an op-by-op pipeline instead of a max over the phase) would
   be the next step. The same case timed twice in one call differs by up to 25% (the `latency` and `issue`
   timings of one prefill, seconds apart), which bounds what any model of these host-bound rows can reach.
9. **GPT-2 holds two more hidden-wide tensors** (its prefill peaks were 6–15% low in every dtype; gpt2-xl −9.1%).
   A CUDA memory-history trace of gpt2-xl's peak (2 layers, 1,024 tokens, bf16, `peak-traces/gpt2-xl.json`,
   measured in seed 4's call) lists six hidden-wide tensors alive in the MLP where the model counted four: the
   position embeddings' output (`GPT2Model.forward` keeps `position_embeds` beside `inputs_embeds` through the
   layer loop) and the attention output (`GPT2Block.forward` keeps `attn_output` through the MLP), beside the
   residual stream and its normed copies; the three ffn-wide `gelu_new` temporaries and the `c_fc` output were
   already counted. `memory.EAGER_HIDDEN_LOCALS` adds the attention output per token and `EAGER_POSITION_LOCALS` the
   position embeddings per position (1 × s × h, shared by the batch: counted per token, the batch-2 to -8 rows read
   (batch − 1) × s × h × the element size high, +2% to +5.6%, found after seeds 9 and 10) for gpt2 under a profile that
   runs transformers' eager code. The random gpt2 rows were not traced (the trace is of the catalog gpt2-xl, whose rows
   therefore no longer test it independently): within ±5%, before → after, fit 1 → 8 of 8, held out 6 → 27 of 28 (median
   9.3% → 0.2%), fresh 6 → 24 of 24 (8.7% → 0.5%), seed 4 2 → 15 of 16 (9.2% → 1.2%; its −24.5% is a 128-token prompt).
   gpt2-xl: −9.1% / −5.5% → +0.0% / +4.0% (the b8 row −0.2% once the position embeddings are counted per position).
10. **Bounds on the random rows** (the table above): every prefill, HF eager, CUDA-graph and lean decode and
   training step time measured on random architectures is at or above its bound — 633 cases, the closest at
   72.9% of its measurement (`tests/live/test_random_rows.py` asserts it).

Left by this pass: the prefill's host/GPU overlap when the two are close (item 8), a calibration that scales the
profile's GEMM share instead of replacing it, fp32 attention over the cache in graph decode (37–59% off; item 6),
grouped-query KV reads at large batch under a graph (up to +65% held out: the eager `kv_read_efficiency` stands
in for them; counting repeat_kv's copy at full bandwidth instead was tried on the rows and gave a worse median,
8.8% → 10.4% held out, so it was not kept), and Falcon's 8k prefill. Gemma-2-9B's all-logits prefill peak is
within 0.2% on the catalog rows above (item 3), so it was not measured again.
"""
