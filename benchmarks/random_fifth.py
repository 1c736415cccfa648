"""The fifth pass of issue 15's mechanisms (docs/accuracy.md, written by benchmarks/random_report.py): the GPU side of
an eager training step split into GEMMs, attention and elementwise kernels, from seed 5's kernel timings."""

from __future__ import annotations

# `python benchmarks/random_points.py` at commit 0ce9aeb (before the fifth pass), on the same files: term -> split ->
# (cases, within target, median |error|, worst error and its case). Only the term the fifth pass changed (items 14–15).
BEFORE_FIFTH: dict[str, dict[str, tuple[int, int, float, str]]] = {
    "train step": {"fit": (17, 11, 0.123, "+43.0% (s0/rand-t10 bf16 b4 s512)"),
                   "held-out": (35, 23, 0.102, "+36.8% (s1/rand-t12 amp b2 s1024 ckpt)"),
                   "fresh": (25, 20, 0.089, "+29.8% (s3/rand-t04 bf16 b2 s1024 ckpt)"),
                   "seed 4": (18, 12, 0.119, "+52.1% (s4/rand-t13 bf16 b2 s1024 ckpt)"),
                   "seed 4 cal": (18, 12, 0.101, "+34.4% (s4/rand-t13 bf16 b2 s1024 ckpt)"),
                   "seed 5": (9, 7, 0.114, "+21.9% (s5/rand-t04 bf16 b8 s256)"),
                   "seed 5 cal": (9, 8, 0.113, "+18.1% (s5/rand-t04 bf16 b8 s256)")},
}

FIFTH_PASS = """\
### Fifth pass (items 14–15): a training step's GPU time, kernel by kind

14. **The eager step's GPU time is GEMMs, attention and elementwise kernels, not one share** (item 2's 0.45 of the
   bf16 peak lumped them; GPU-bound fp32 steps read up to 27% low). Seed 5's training rows time the kernels of one
   step by kind (`step_extra`: `gemm_kernel_s`, `attention_kernel_s`, `other_kernel_s`). Over its 6 16-bit `fit`
   rows the GEMM kernels alone run at 0.61–0.78 of the bf16 peak (executed GEMM FLOPs, recompute included; median
   0.71; the fp32 fit row 0.73, beside the 0.74 kept), and the other kernels — elementwise work (norms, rotary,
   activations, residual adds, casts), the loss stage and the optimizer — take 40–71% of those rows' kernel
   time. So `eager_step.eager_compute_s` now times, per phase, the GEMMs at `train_flop_efficiency` (now a GEMM
   share, 0.71), attention at the prefill's `attention_flop_efficiency` (0.42; fp32: `fp32_attention_flop_efficiency`,
   0.40), and the elementwise kernels at the profile's bandwidth (`eager_step.elementwise_s`): the forward moves
   the prefill's passes (`elementwise_hidden_passes` × h + `elementwise_ffn_passes` × ffn per token and layer, in
   the compute dtype), the backward `train_backward_elementwise_ratio` times that (checkpointing adds one
   forward). That ratio is the fit rows' other kernels less the separately timed optimizer step, the loss stage's
   and autocast's bytes and the forward's (and recompute's) passes, over the forward's passes: −0.6 to 8.6 over
   the 7 fit rows (small host-bound rows read low or high; their kernels are a few microseconds each), median
   4.4 — a fitted figure, not counted op by op (the backward of an elementwise op reads its output's gradient and
   its saved inputs and writes each input's gradient, and autograd accumulates the residual branches' gradients,
   which is of that order). The profile's field unset keeps the lumped share (`None`); the `hf` and `hf-graph`
   profiles set it. Train step time, before → after (the tables above and below): fit 12.3% → 9.7% (11 → 10 of 17
   within ±15%), held out 10.2% → 6.2% (23 → 24 of 35), fresh 8.9% → 5.9% (20 → 22 of 25), seed 4 11.9% → 11.4%
   (12 → 13 of 18), seed 4 cal 10.1% → 8.7% (12 → 14), seed 5 11.4% → 3.6% (7 of 9 both), seed 5 cal 11.3% →
   4.3% (8 of 9 both). GPU-bound fp32 steps gain most (s4/rand-t02 −27.2% → −15.4%, s1/rand-t20 −16.6% →
   −4.9%, s5/rand-t14 −10.7% → +0.3%), and large 16-bit ones (s5/rand-t10 +11.5% → +1.8%, s5/rand-t13 +12.5% →
   +4.3%). Gemma 2's GPU-bound 16-bit steps go lower (s5/rand-t15 −12.3% → −18.8%, s4/rand-t03 +0.8% →
   −11.0%): their sliding-window layers pass SDPA a mask and their layers dispatch 76 operations where llama's
   dispatch 52 (item 3), while the elementwise passes are llama's count. The worst cases (host-bound checkpointed
   or small 16-bit steps, +37% to +52%) do not move: they are the host floor's (items 2 and 5), and the target
   (median ≤ 8%, all within ±15%) is met in median on every held-out split but seed 4's (11.4%, calibrated
   8.7%), and not in the worst case. On the catalog's training table above (11 steps of five models, measured
   before issue 15) the step's median error goes 7.6% → 10.7%: llama-3.2-1b and -3b amp steps come closer
   (−7.5 / −6.7 / −6.8% → −2.6 / −3.4 / −4.2%), checkpointed bf16 steps go higher (llama-3.2-3b +7.6% →
   +11.2%, llama-3.2-1b bf16 −0.3% → +5.4%).
15. **Sliding windows in a training step run the masked kernel over every causal pair** (after item 14, Gemma 2's
   GPU-bound 16-bit steps read low: s5/rand-t15 −18.8%, s0/rand-t15 −26.2%). transformers hands SDPA a model's
   sliding windows as an explicit mask in training as in a prefill, so the memory-efficient kernel scores every
   causal pair — the rule and the figure the prefill already has (`attention_kernels.prefill_masked_attention`,
   `masked_attention_flop_efficiency` 0.17, fitted on mistral-7b's catalog prefills; nothing fitted here; item 25
   masks only the layers whose window the sequence reaches, at 0.15):
   `eager_step.eager_compute_s` counts attention with the windows ignored at that fraction, forward once and
   backward twice, where the profile splits the step (item 14). Train step time, item 14 → item 15: fit 9.7% →
   9.7% (10 → 11 of 17 within ±15%), held out 6.2% → 6.2% (24 of 35), fresh 5.9% → 4.5% (22 of 25), seed 4
   11.4% → 10.8% (13 of 18), seed 4 cal 8.7% → 8.7%, seed 5 3.6% → 3.6% and seed 5 cal 4.3% → 4.3% (their
   held-out sliding-window steps are host-bound or fp32); s5/rand-t15 −18.8% → −12.9%, s0/rand-t15 −26.2% → −22.9%,
   s3/rand-t19 −11.3% → −4.1%. On the catalog's training table phi-3-mini (sliding-window layers) goes −11.2% →
   −6.9%, and the table's median step error, 7.6% before item 14, reads 6.9%.

Left by this pass: the elementwise backward counted op by op per family (gemma2's own passes: its layers dispatch
76 operations where llama's dispatch 52), the 4–13 ms between the kernels' busy time and the wall time of GPU-bound
steps (the host's preamble, as item 11 found for prefills), and small GEMMs' wave quantization at 1,024 tokens and below
(item 12: 1.0–4.7× their modelled time), which a shape-aware GEMM term over the card's SM count would need.
"""
