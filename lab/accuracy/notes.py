"""The prose of docs/accuracy.md: how it was measured and, per section, where the estimate misses and why. Every
figure in the tables beside it is computed from the rows (lab/accuracy/report.py); the figures quoted here are the
mechanisms' own (a trace, a count), named where they come from."""

from __future__ import annotations

from typing import Any

MEMORY = """\
Where it misses, and why:

- **NVML used after load, small models with large vocabularies** (qwen2.5-0.5b, llama-3.2-1b, gpt2-xl read
  −19% to −29%; the 7–47 B models within 1.5%): building a model with random weights leaves initialisation
  temporaries in PyTorch's allocator cache, which NVML counts and a checkpoint load would not; on gpt2-xl the rest
  is cuBLAS workspaces beyond the profile's one.
- **Static cache, the first case of a run** (−4% to −33% on one case per model): the first GEMM of a kind
  allocates a cuBLASLt workspace through PyTorch's allocator, counted in that case. Later runs warm up first, and
  their static caches are exact.
- **Random prefills of 128 tokens** (activation −8% to −25%): the caching allocator's blocks, not the tensors —
  the same prefills against the bytes the tensors requested (`prefill requested`) are within 2.4%.
- Mechanisms the activation term counts because a trace showed them (so their rows confirm the term rather than
  test it): transformers' grouped experts replicate each token once per routed expert; Gemma 2's logit
  soft-capping keeps a second logits tensor; GPT-2 keeps its position embeddings and attention output live; fp32
  grouped-query attention and Falcon's unexpanded KV heads run PyTorch's math kernel, 9 bytes per score; sliding
  models keep a boolean mask once the prompt reaches the window; phi-3's fused gate-up keeps 2 × ffn live."""

PREFILL = """\
Where it misses, and why: a prefill the host sets (transformers dispatching its operations one by one) takes the
host's speed at that moment, which moves between two states from case to case (*Host dispatch*): there one figure
misses ±15% in most cases, and the span the estimate states holds most of them. Where the GPU sets the time the
target holds. Named misses among the catalog models: qwen2.5-0.5b at batch 1 × 2,048 (+36%, host-bound),
gemma-3-1b at batch 1 × 2,048 (−28%, near the host floor, 5:1 local/global masks), Falcon-7B's math-kernel
prefill at 8,192 tokens (−18%) and DeepSeek-V2-Lite at batch 1 × 2,048 (−27%: its latent attention's
decompression runs as separate kernels)."""

DECODE = """\
Where it misses, and why: the lean CUDA-graph decode (`optimized`) and the graph decode of transformers
(`hf-graph`) meet their targets; a graph removes the host. transformers' eager decode (`hf`) is set by the host in
almost every case, and misses as the host's state moves (*Host dispatch*); the span it states holds about two in
three. Eager MoE decodes (mixtral −16% to −41%) loop over experts in Python; gpt2-xl at batch 16 reads +64%; the
random `optimized` misses are long contexts with few KV heads, where the attention kernel has too few thread
blocks (*Decode attention kernels*)."""

HOST = """\
An eager phase cannot finish before the host has issued its operations: the `hf` profile counts them per family
(`eager_ops_per_layer`, `eager_ops_outside_layers`; lab/measure/count_eager_ops.py) and times each at
`host_per_op_s`; `estimator calibrate` measures that cost on the user's host (`host_cost`)."""

DECODE_KERNELS = """\
The attention of a decode step, each kernel timed alone (tests/data/measured/attention) and judged on rows not
used to fit it. The lean decode's SDPA runs cuDNN's tiled kernel; with few KV heads over long contexts it has too
few thread blocks for the SMs and runs under bandwidth. transformers' static cache hands SDPA a mask, so
`repeat_kv` copies the KV heads per query head before the kernel reads them. fp32 runs the memory-efficient
kernel, one thread block per (sequence, query head), walking the cache in waves of the SMs. The fixed cost of a
graph decode is counted per operation: a per-layer cost beside it fits below zero on the same rows."""

PREFILL_KERNELS = """\
A prefill's GEMMs are timed one by one by shape (`gemm`, `fp32_gemm`: a roofline with a kernel's fixed time,
`python -m lab.fit.gemm`); its non-vectorized elementwise kernels by their elements (`strided_elements_per_s`,
`python -m lab.fit.strided_elements_per_s`); transformers' grouped experts as their grouped GEMMs and dispatch
(`grouped_experts`, `python -m lab.fit.grouped_experts`). Each probe's check rows are other shapes than its fit
rows; cuBLAS picks a different kernel from one shape to the next, which is the scatter left. A narrow model's
one-KV-head projections at 8 rows run one slow `sm80_xmma_gemm` kernel (2.4 × its shape's time;
`h100-2026-12-06-narrow-gemm.jsonl`), a cuBLAS choice no rule by shape knows."""

TRAINING = """\
The steady peak counts what a CPU trace of each family's step holds (lab/measure/train_live_set_cpu.py): its norms'
saved tensors, the math kernel's fp32 probabilities where SDPA falls back to it, Gemma 2's soft-capped logits, and
under autocast with full recomputation the layers' bf16 weight copies freed between layers. The eager step's GPU
time is the GEMMs, attention and elementwise kernels of each pass (PyTorch's foreach AdamW: 21 state accesses per
parameter over 8 kernels, traced), and its host time the counted operations. Where it misses, and why: small
checkpointed models near the host floor, whose host time moves with the host's state, and 16-bit steps whose host
issued for most of the step (*Host dispatch*)."""

TENSOR_PARALLEL = """\
A Megatron-style tensor-parallel Llama under torchrun (lab/measure/tensor_parallel.py): column-parallel qkv and
gate_up, row-parallel o and down with an NCCL all-reduce each, vocabulary-parallel embedding and head, random bf16
weights, static KV cache sharded by KV heads, flash SDPA, CUDA-graph decode, on two H200s. Machines with 4 or 8 GPUs
were not lent, so TP 4 and 8 are not measured."""

RANDOM = """\
lab/measure/random_architectures.py draws architectures from a seed — llama, qwen2, mistral, gemma2 and gpt2
families, random widths, head counts, grouped-query ratios (MHA to MQA) and head_dim, fp32, fp16 or bf16 — builds
each with random weights on the H200 and measures prefill (peak and time), HF eager, CUDA-graph and lean decode and
training steps. Seed 0 marks each architecture `fit` or `held-out`; mechanisms and constants were derived from the
`fit` rows (and seed 2's small models, all `fit`); every other seed is held out, each measured in its own device call
(`tests/data/measured/README.md` has the commands). Seeds 4–6 ran `estimator calibrate` first and are judged also with
that calibration (below). `python -m lab.accuracy.random_points --cases` prints every case."""


def intro(rows: list[dict[str, Any]], models: list[str], cal_note: str) -> list[str]:
    device = next((r for r in rows if r.get("kind") == "device"), {})
    return [
        "# Accuracy", "",
        "How close the estimate is to what was measured, term by term. Generated by `python -m lab.accuracy.report` "
        "from the rows in `tests/data/measured/` (`tests/data/measured/README.md` says how each file was measured) "
        "— do not edit by hand.", "",
        "**For your model and card.** Every row was measured on an NVIDIA H200 SXM "
        f"(PyTorch {device.get('torch', '?')}, transformers {device.get('transformers', '?')}) with random weights "
        "built from the model's config. Memory terms are counts of tensors and carry to any card. Time terms carry "
        "through the card's datasheet and the profile's efficiencies: the GPU-set terms (lean and graph decode, "
        "GPU-bound prefill) as the tables show, the host-set ones (transformers' eager prefill of small models and "
        "its eager decode) only as the span the estimate states, unless `estimator calibrate` has measured your "
        "host. Error = (predicted − measured) ÷ measured; a bound (datasheet peaks, no profile) must never be above "
        "its measurement.", "",
        f"Catalog models measured: {', '.join(models)}. Profiles: `hf` for load, prefill and transformers' decode, "
        "`optimized` for the lean CUDA-graph decode. The shipped profiles were fitted on llama-3.2-1b, "
        "llama-3.1-8b and mistral-7b-v0.1 (specs/profiles/*.yaml, `fitted_on`): their rows are shown apart; the "
        f"others are held out. The calibrated rows apply this card's calibration ({cal_note}); a profile's matmul "
        "share is scaled by the file's reading ÷ the profile's `matmul_reference_efficiency`.", "",
        "Targets: weights ±0.5%, KV cache ±1%, NVML used after load ±3%, prefill activation peak ±10% (random "
        "architectures ±5%), training steady-state peak ±10% (±5%), optimized decode ±10%, prefill ±15%, "
        "graph and eager decode ±30% (random architectures), training step ±15% (random architectures). "
        "Per-case tables: `python -m lab.accuracy.report --cases`.", ""]
