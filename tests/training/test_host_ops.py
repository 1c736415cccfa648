"""A training step's host dispatch counted in operations (estimator.training.host_ops): the shipped counts are the
trace's, each family, precision, checkpointing and attention case takes its own, exactly, and a family the profile
counts none of keeps the figures per layer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from estimator import default_catalog
from estimator.catalog.architecture import Architecture, Attention, Mlp
from estimator.notes import word_values
from estimator.training.eager_step import dispatch_notes, eager_phases
from estimator.training.estimate import estimate_training
from estimator.training.host_ops import host_s, step_ops
from estimator.training.workload import Precision, Recompute, TrainingWorkload
from tests.lab_modules import lab_module, needs_torch_and_transformers, skip_unless_counted_transformers

MEASURED = Path(__file__).resolve().parents[1] / "data" / "measured"
TRACE = MEASURED / "train-ops.json"  # counted on the H200 (CUDA), what the profiles ship
CPU_TRACE = MEASURED / "train-ops-cpu.json"  # the same script on this project's CPU machine


def _arch(model_type: str, kv_heads: int = 8) -> Architecture:
    return Architecture(model_type=model_type, hidden_size=512, num_layers=10, vocab_size=1000,
                        tie_word_embeddings=False,
                        attention=Attention(num_heads=8, num_kv_heads=kv_heads, head_dim=64, v_head_dim=64),
                        mlp=Mlp(intermediate_size=1024, gated=True))


def _workload(precision: Precision = "bf16", recompute: Recompute = "none", **extra: Any) -> TrainingWorkload:
    return TrainingWorkload(batch=1, seq_len=512, precision=precision, recompute=recompute,
                            profile=default_catalog().profiles.get("hf"), **extra)


@pytest.mark.parametrize("profile", ["hf", "hf-graph"])
def test_the_shipped_counts_are_the_trace_of_the_transformers_the_profile_describes(profile: str) -> None:
    trace = json.loads(TRACE.read_text(encoding="utf-8"))
    assert (trace["transformers"], trace["device"]) == ("5.17.0", "cuda")  # the version the hf profiles name
    shipped = default_catalog().profiles.get(profile).train_ops_by_family
    assert {family: {k: list(v) for k, v in ops.model_dump().items() if k in trace["ops"][family]}
            for family, ops in shipped.items()} == trace["ops"]
    assert all(ops.model_dump().keys() - trace["ops"][f].keys() <= {"fused_single", "math_grouped", "math_single"}
               for f, ops in shipped.items())


def test_the_gpu_count_is_the_cpu_count_but_the_rng_stash() -> None:
    """On the H200 a checkpointed forward issues two more operations a layer than on the CPU (checkpointing stashes
    the CUDA RNG state); every other column of the decoder families is the same."""
    gpu, cpu = (json.loads(path.read_text(encoding="utf-8"))["ops"] for path in (TRACE, CPU_TRACE))
    for family in ("llama", "qwen2", "mistral", "gemma2", "qwen3", "gemma3_text", "olmo2"):
        for mode in ("bf16", "amp", "fp32"):
            stashed = list(cpu[family][mode])
            stashed[2] += 2
            assert gpu[family][mode] == stashed, (family, mode)


@pytest.mark.parametrize(("model_type", "kv", "precision", "recompute", "ops"), [
    ("llama", 8, "bf16", "none", (58 + 10 * 76, 37 + 10 * 141)),
    ("llama", 8, "amp-bf16", "none", (55 + 10 * 86, 37 + 10 * 157)),  # autocast's casts
    ("llama", 8, "amp-fp16", "none", (55 + 10 * 86, 37 + 10 * 157)),
    ("llama", 8, "bf16", "full", (58 + 10 * 75, 37 + 10 * 274)),  # the backward re-runs the forward
    ("llama", 2, "bf16", "none", (58 + 10 * 76, 37 + 10 * 141)),  # grouped KV heads: the fused kernel's count
    ("llama", 1, "bf16", "none", (58 + 10 * 76, 37 + 10 * 140)),  # one KV head: its gradient's reshape is a view
    ("llama", 8, "fp32", "none", (52 + 10 * 72, 34 + 10 * 137)),  # the memory-efficient kernel
    ("llama", 2, "fp32", "none", (52 + 10 * 102, 34 + 10 * 161)),  # the math kernel
    ("llama", 1, "fp32", "full", (52 + 10 * 101, 34 + 10 * 320)),
    ("gemma2", 8, "bf16", "none", (77 + 10 * 102, 43 + 10 * 185)),
    ("phi3", 2, "fp32", "none", (52 + 10 * 100, 34 + 10 * 145)),
])
def test_each_case_issues_its_own_operations(model_type: str, kv: int, precision: Precision, recompute: Recompute,
                                             ops: tuple[int, int]) -> None:
    assert step_ops(_arch(model_type, kv), _workload(precision, recompute), 10) == ops


def test_host_time_is_operations_times_the_phase_cost() -> None:
    """A 10-layer llama in bf16: 818 forward operations at 20.03 µs, 1,447 backward at 16.74 µs; checkpointed, 808 at
    31.85 µs and 2,777 at 19.66 µs (lab/fit/train_host_per_op_s.py's medians over seed 2)."""
    assert host_s(_arch("llama"), _workload(), 10) == pytest.approx((818 * 2.003e-5, 1447 * 1.674e-5), rel=1e-12)
    assert host_s(_arch("llama"), _workload(recompute="full"), 10) == pytest.approx(
        (808 * 3.185e-5, 2777 * 1.966e-5), rel=1e-12)


@pytest.mark.parametrize(("arch", "workload"), [
    (_arch("granite"), _workload()),  # a family not counted
    (_arch("llama"), _workload(lora_rank=16)),  # LoRA's adapters are not counted
    (_arch("llama"), _workload("fp8")),
])
def test_what_the_profile_counts_none_of_keeps_the_figures_per_layer(arch: Architecture,
                                                                   workload: TrainingWorkload) -> None:
    assert step_ops(arch, workload, 10) is None
    assert host_s(arch, workload, 10) == pytest.approx((3.0e-3 + 10 * 1.42e-3, 10 * 3.39e-3), rel=1e-12)


def test_the_phase_costs_are_the_fit_of_seed_2() -> None:
    """lab/fit/train_host_per_op_s.py's medians are what the profile ships (to its four digits)."""
    train_host_ops = lab_module("fit.train_host_per_op_s")
    hf = default_catalog().profiles.get("hf")
    costs = train_host_ops.per_op_costs(hf)
    shipped = (hf.train_host_forward_per_op_s, hf.train_host_backward_per_op_s,
               hf.train_host_checkpointed_forward_per_op_s, hf.train_host_checkpointed_backward_per_op_s)
    assert [float(f"{c:.4g}") for c in costs.values()] == list(shipped)


@needs_torch_and_transformers
def test_the_cpu_trace_reproduces_under_the_installed_transformers() -> None:
    """Re-counts llama on the CPU where transformers 5.17 is installed (the count depends on its modeling code: 5.24
    dispatches one more operation a layer under amp, nine fewer outside the layers, and runs Gemma 2 without SDPA)."""
    skip_unless_counted_transformers()
    count_train_ops = lab_module("measure.count_train_ops")
    trace = json.loads(CPU_TRACE.read_text(encoding="utf-8"))["ops"]["llama"]
    layer, fixed = count_train_ops.per_layer("llama", "amp", "multi", "cpu", False)
    assert [*layer, *fixed] == trace["amp"]


def test_explain_shows_each_phase_beside_its_host_dispatch() -> None:
    """--explain's line: the counted operations and their cost per phase, or why the figures per layer stand."""
    catalog = default_catalog()
    h200, arch = catalog.gpus.get("h200"), _arch("llama")
    (counted,) = dispatch_notes(arch, _workload(), eager_phases(arch, _workload(), h200, 989.4e12, 10**8, 10), 10)
    assert (counted.values["forward_ops"], counted.values["backward_ops"]) == (818, 1447)
    assert counted.values["forward_host_s"] == pytest.approx(818 * 2.003e-5, rel=1e-12)
    text = word_values(counted.code, counted.values, binary=False)
    assert "forward GPU" in text and "host dispatch 818 operations × 20.0 µs = 16.4 ms" in text
    assert "llama's operations (bf16), counted by the profile" in text
    lora = _workload(lora_rank=16)
    (per_layer,) = dispatch_notes(arch, lora, eager_phases(arch, lora, h200, 989.4e12, 10**8, 10), 10)
    assert "per layer × 10 layers (LoRA's adapters are not counted)" in word_values(
        per_layer.code, per_layer.values, binary=False)
    for profile, lines in (("hf", 1), ("optimized", 0)):  # a profile without an eager step has none
        report = estimate_training(catalog.models.get("llama-3.2-1b"), h200, _workload().model_copy(
            update={"profile": catalog.profiles.get(profile)}))
        assert sum(n.code == "train-dispatch" for n in report.explain) == lines
