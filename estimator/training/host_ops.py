"""The host's dispatch of an eager (Hugging Face) training step: the operations it issues × its cost of one.

The host issues a step's kernels one by one and the GPU runs them as they come, so each phase of a micro-batch takes
the longer of its GPU time and its host issue time (`eager_step.eager_compute_s`). How many operations a phase
issues is a count of transformers' own model (``lab/measure/count_train_ops.py``: a TorchDispatchMode over the
forward under the loss and its backward, tests/data/measured/train-ops.json), per family and precision: amp adds
autocast's casts (86 a llama layer where bf16 issues 76), Gemma 2's four norms and soft-capping add more (102),
checkpointing re-runs the forward inside the backward through saved-tensor hooks (274 a llama layer where 141), and
PyTorch's math attention kernel (fp32 with grouped KV heads) 30 more forward. A family the profile counts none of,
LoRA (the adapters' operations are not counted) and FP8 keep the profile's figures per layer.

Measured on the H200 with PyTorch 2.11 and transformers 5.17 (tests/data/measured/random, ``kind=train_parts``: the
forward, backward and optimizer step of 30 small random models, each with its host issue time; docs/accuracy.md, "Host
dispatch"): a forward operation costs the host about 20 µs where it records the autograd graph, a backward one about
17 µs (the autograd engine's C++ loop), and a checkpointed forward one about 32 µs (its pack hooks).
"""

from __future__ import annotations

from estimator.catalog.architecture import Architecture
from estimator.catalog.profiles import LayerOps, TrainOps
from estimator.model.attention_kernels import runs_math_attention
from estimator.training.workload import TrainingWorkload

MODES = {"bf16": "bf16", "amp-bf16": "amp", "amp-fp16": "amp", "fp32": "fp32"}  # precision -> the count's column


def uncounted(arch: Architecture, w: TrainingWorkload) -> str | None:
    """Why the profile counts no operations for this run (see the module), or None where it does."""
    if w.lora:
        return "LoRA's adapters are not counted"
    if w.precision not in MODES:
        return f"--precision {w.precision} is not counted"
    if arch.model_type not in w.profile.train_ops_by_family:
        return f"the profile counts none for {arch.model_type}"
    return None


def family_ops(arch: Architecture, w: TrainingWorkload) -> TrainOps | None:
    """The profile's count for this model's family, or None where it counts none for this run (`uncounted`)."""
    return None if uncounted(arch, w) else w.profile.train_ops_by_family[arch.model_type]


def attention_ops(counts: TrainOps, arch: Architecture, w: TrainingWorkload) -> LayerOps:
    """Per-layer operations beyond a multi-head fused kernel's: one KV head, or PyTorch's math kernel."""
    single = arch.attention.latent is None and arch.attention.num_kv_heads == 1
    if w.attention == "sdpa" and runs_math_attention(arch, w.profile, fp32=w.compute_dtype == "fp32",
                                                     tokens=w.seq_len):
        return counts.math_single if single else counts.math_grouped
    return counts.fused_single if single else (0, 0, 0, 0)


def step_ops(arch: Architecture, w: TrainingWorkload, layers: int) -> tuple[int, int] | None:
    """(forward, backward) operations one micro-batch issues through ``layers`` decoder layers, None where the
    profile counts none (`family_ops`)."""
    counts = family_ops(arch, w)
    if counts is None:
        return None
    mode: tuple[int, ...] = getattr(counts, MODES[w.precision])
    extra = attention_ops(counts, arch, w)
    ck = 2 if w.recompute == "full" else 0
    return (mode[4] + layers * (mode[ck] + extra[ck]), mode[5] + layers * (mode[ck + 1] + extra[ck + 1]))


def host_s(arch: Architecture, w: TrainingWorkload, layers: int) -> tuple[float, float]:
    """(forward, backward) seconds the host needs to issue one micro-batch through ``layers`` layers: counted
    operations × the profile's cost per operation, else its figures per layer."""
    prof, checkpointed = w.profile, w.recompute == "full"
    ops = step_ops(arch, w, layers)
    if ops is not None:
        forward, backward = ops
        if checkpointed:
            return (forward * prof.train_host_checkpointed_forward_per_op_s,
                    backward * prof.train_host_checkpointed_backward_per_op_s)
        return forward * prof.train_host_forward_per_op_s, backward * prof.train_host_backward_per_op_s
    if checkpointed:
        return (prof.train_host_forward_s + layers * prof.train_host_checkpointed_forward_per_layer_s,
                layers * prof.train_host_checkpointed_backward_per_layer_s)
    return (prof.train_host_forward_s + layers * prof.train_host_forward_per_layer_s,
            layers * prof.train_host_backward_per_layer_s)
