"""Totals are the sum of their parts, and breakdowns add up to their totals, in every mode and layout.

Exact integers throughout: every figure here is bytes the estimate adds up, so the sums must be exact.
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator import InferenceWorkload, estimate
from estimator.catalog.architecture import ModelSpec
from estimator.catalog.files import read_yaml
from estimator.catalog.registry import Catalog, default_catalog
from estimator.model.parallel import tensor_parallel_degrees
from estimator.planning.plan import Goal, PlanOption, load_prices, plan
from estimator.training.estimate import estimate_training
from estimator.training.report import TrainingMemoryReport
from estimator.training.workload import TrainingWorkload

pytestmark = pytest.mark.property


@cache
def _catalog() -> Catalog:
    return default_catalog()


MODELS = sorted(m.name for m in _catalog().models)
GPUS = sorted(g.name for g in _catalog().gpus)
DTYPES = ["bf16", "fp32", "fp8", "awq-int4", "nf4", "q4_k_m", "q5_k_m", "q6_k", "q8_0"]


def _degree(model: ModelSpec, pick: int) -> int:
    degrees = list(tensor_parallel_degrees(model))
    return degrees[pick % min(len(degrees), 6)]


@settings(max_examples=80, deadline=None)
@given(model=st.sampled_from(MODELS), gpu=st.sampled_from(GPUS), pick=st.integers(0, 5),
       batch=st.integers(1, 128), prompt=st.integers(1, 40_000), output=st.integers(0, 4096),
       dtype=st.sampled_from(DTYPES), profile=st.sampled_from(["optimized", "hf"]))
def test_inference_total_is_the_sum_of_its_parts(model: str, gpu: str, pick: int, batch: int, prompt: int,
                                                 output: int, dtype: str, profile: str) -> None:
    c = _catalog()
    spec = c.models.get(model)
    tp = _degree(spec, pick)
    w = InferenceWorkload(batch=batch, prompt_tokens=prompt, output_tokens=output, weight_format=c.formats.get(dtype),
                          kv_format=c.formats.get("bf16"), profile=c.profiles.get(profile), tensor_parallel=tp)
    m = estimate(spec, c.gpus.get(gpu), w).memory
    kv, act = m.kv_cache_bytes or 0, m.activation_bytes or 0
    assert m.total_bytes == (m.weights_bytes + m.weights_replicated_bytes + kv + act + m.overhead_bytes
                             + m.state_bytes)
    assert m.per_gpu_bytes == (m.weights_per_gpu_bytes + (m.kv_cache_per_gpu_bytes or 0)
                               + (m.activation_per_gpu_bytes or 0) + m.overhead_per_gpu_bytes + m.state_per_gpu_bytes)
    assert m.total_bytes == m.per_gpu_bytes * tp
    assert m.weights_per_gpu_bytes * tp == m.weights_bytes + m.weights_replicated_bytes
    assert m.weights_replicated_bytes >= 0
    if tp == 1:
        assert m.weights_replicated_bytes == 0


@settings(max_examples=80, deadline=None)
@given(model=st.sampled_from(MODELS), pick=st.integers(0, 5), batch=st.integers(1, 64),
       prompt=st.integers(1, 40_000), output=st.integers(0, 4096), dtype=st.sampled_from(DTYPES),
       profile=st.sampled_from(["optimized", "hf"]))
def test_inference_breakdowns_add_up_to_their_totals(model: str, pick: int, batch: int, prompt: int, output: int,
                                                     dtype: str, profile: str) -> None:
    c = _catalog()
    spec = c.models.get(model)
    tp = _degree(spec, pick)
    w = InferenceWorkload(batch=batch, prompt_tokens=prompt, output_tokens=output, weight_format=c.formats.get(dtype),
                          kv_format=c.formats.get("bf16"), profile=c.profiles.get(profile), tensor_parallel=tp)
    m = estimate(spec, c.gpus.get("h200"), w).memory
    assert sum(p.bytes for p in m.weights_by_role) == m.weights_bytes
    if m.kv_by_window:
        assert sum(p.bytes for p in m.kv_by_window) == m.kv_cache_per_gpu_bytes
        assert sum(p.total_bytes for p in m.kv_by_window) == m.kv_cache_bytes
    assert sum(p.bytes for p in m.state_by_kind) == m.state_per_gpu_bytes


def test_kv_by_window_adds_up_when_transformers_holds_the_whole_prompt(catalog: Catalog) -> None:
    """Regression (kv_by_window did not add up to kv_cache_bytes under --profile hf for sliding-window models):
    right after prefill transformers holds every prompt token in every layer, which the total counted and the
    windows did not. gemma-2-9b: 42 layers, half with a 4096-token window; a 20,000-token prompt and 16 output
    tokens. Windowed: 21 × 20,016 + 21 × 4,096 token-layers; whole prompt: 42 × 20,000 — more, so that is held."""
    spec = default_catalog().models.get("gemma-2-9b")
    arch = spec.arch
    assert arch is not None and arch.num_layers == 42
    w = InferenceWorkload(batch=1, prompt_tokens=20_000, output_tokens=16, weight_format=catalog.formats.get("bf16"),
                          kv_format=catalog.formats.get("bf16"), profile=catalog.profiles.get("hf"))
    m = estimate(spec, catalog.gpus.get("h200"), w).memory
    assert [p.tokens for p in m.kv_by_window] == [20_000, 20_000]
    assert sum(p.bytes for p in m.kv_by_window) == m.kv_cache_per_gpu_bytes
    per_token_layer = 8 * (256 + 256) * 2  # 8 KV heads × (K 256 + V 256) × 2 bytes (bf16)
    assert m.kv_cache_bytes == 42 * 20_000 * per_token_layer


def test_total_is_weights_kv_activations_overhead_at_tensor_parallel(catalog: Catalog) -> None:
    """Regression (total_bytes was not weights + KV + activations + overhead at TP ≥ 2, the replicated
    norms being in the total only): weights_replicated_bytes names them. llama-3.1-8b over 2 GPUs in bf16: the
    norms (65 × 4096 elements: 2 per layer × 32 + the final one) are on both GPUs, so once more than the model's
    one copy: 65 × 4096 × 2 bytes; every linear, embedding and head tensor halves exactly in bf16."""
    spec = default_catalog().models.get("llama-3.1-8b")
    w = InferenceWorkload(batch=1, prompt_tokens=1024, weight_format=catalog.formats.get("bf16"),
                          kv_format=catalog.formats.get("bf16"), profile=catalog.profiles.get("optimized"),
                          tensor_parallel=2)
    m = estimate(spec, catalog.gpus.get("h100"), w).memory
    assert m.weights_replicated_bytes == 65 * 4096 * 2
    assert m.total_bytes == (m.weights_bytes + m.weights_replicated_bytes + (m.kv_cache_bytes or 0)
                             + (m.activation_bytes or 0) + m.overhead_bytes + m.state_bytes)


def test_k_quant_weights_on_one_gpu_are_the_sum_by_role(catalog: Catalog) -> None:
    """Regression (off by a few bytes with K-quants): one GPU's weights round like the breakdown by role
    (each role's bytes rounded up once), so weights_per_gpu_bytes = weights_bytes = Σ weights_by_role exactly."""
    spec = default_catalog().models.get("bert-base")
    c = default_catalog()
    for dtype in ("q4_k_m", "q5_k_m", "q6_k"):
        w = InferenceWorkload(batch=1, prompt_tokens=128, weight_format=c.formats.get(dtype),
                              kv_format=c.formats.get("bf16"), profile=c.profiles.get("optimized"))
        m = estimate(spec, c.gpus.get("h100"), w).memory
        assert m.weights_per_gpu_bytes == m.weights_bytes == sum(p.bytes for p in m.weights_by_role)


layouts = st.fixed_dictionaries({
    "batch": st.integers(1, 8), "seq_len": st.sampled_from([128, 1024, 4096]),
    "precision": st.sampled_from(["fp32", "amp-bf16", "bf16"]),
    "optimizer": st.sampled_from(["adamw", "adamw-fused", "adam-8bit", "sgd", "lion"]),
    "zero": st.integers(0, 3), "grad_accum": st.integers(1, 8), "dp": st.sampled_from([1, 2, 8]),
    "tp": st.sampled_from([1, 2, 4]), "pp": st.sampled_from([1, 2, 4]),
    "recompute": st.sampled_from(["none", "selective", "full"]),
})


def _phases(m: TrainingMemoryReport, grad_accum: int) -> tuple[int, set[int]]:
    """(optimizer-step phase, the forward-backward phase with and without the loss gradient) from the report's
    own terms (`training.estimate._peak`)."""
    step = m.model_states_bytes + m.ddp_bucket_bytes + m.optimizer_step_bytes
    resident = (m.weights_bytes + m.master_weights_bytes + m.optimizer_bytes + m.ddp_bucket_bytes
                + (m.gradient_bytes if grad_accum > 1 else 0))
    forward = resident + m.autocast_copy_bytes + m.gathered_params_bytes + m.activation_bytes
    return step, {forward, forward + m.loss_backward_bytes}


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(["llama-3.2-1b", "llama-3.1-8b", "qwen2.5-7b", "mixtral-8x7b", "gpt2"]),
       layout=layouts)
def test_training_total_is_the_sum_of_its_parts(model: str, layout: dict[str, object]) -> None:
    c = _catalog()
    w = TrainingWorkload(profile=c.profiles.get("hf"), **layout)
    r = estimate_training(c.models.get(model), c.gpus.get("h100"), w)
    m = r.memory
    assert m.model_states_bytes == m.weights_bytes + m.gradient_bytes + m.master_weights_bytes + m.optimizer_bytes
    assert m.per_gpu_bytes == m.peak_tensor_bytes + m.overhead_bytes
    assert m.total_bytes == m.per_gpu_bytes * r.workload.gpus == m.per_gpu_bytes * w.dp * w.tp * w.pp
    step, forward = _phases(m, w.grad_accum)
    assert m.peak_tensor_bytes >= step
    if m.peak_phase == "optimizer-step":
        assert m.peak_tensor_bytes == step
    elif m.peak_phase == "forward-backward":
        phase = next(p for p in m.phases if p.phase == "forward-backward")
        fields = m.model_dump()
        assert m.peak_tensor_bytes == sum(t.bytes for t in phase.terms)
        assert all(t.bytes <= fields[t.term] for t in phase.terms)  # a phase holds at most the report's figure
        if not (w.amp and w.recompute == "full"):  # there backward starts without the layers' autocast copies
            assert m.peak_tensor_bytes in forward
        else:  # training.step_phases: backward's start without the layers' copies, or the forward's end with every
            # copy and the logits at the loss (6 bytes a logit) in place of the loss gradients (8)
            assert m.loss_forward_bytes < m.loss_backward_bytes
            held = next((t.bytes for t in phase.terms if t.term == "autocast_copy_bytes"), 0)
            dropped = m.autocast_copy_bytes - held
            if dropped:
                assert m.peak_tensor_bytes in {f - dropped for f in forward}
            else:  # every copy held (or none at all: ZeRO ≥ 1 counts no autocast copies): either end
                assert m.peak_tensor_bytes in forward | {min(forward) + m.loss_forward_bytes}


@settings(max_examples=8, deadline=None)
@given(model=st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "qwen3-30b-a3b", "nemotron-h-56b", "gemma-2-9b"]),
       prompt=st.sampled_from([512, 4096, 30_000]), concurrency=st.sampled_from([1, 16, 256]))
def test_plan_memory_per_gpu_is_the_sum_of_its_parts(model: str, prompt: int, concurrency: int) -> None:
    """Every option of a plan (TP, PP, EP and replicas as the search chose them), exactly; a hybrid's recurrent
    state included (it was left out of the plan's per-GPU memory before)."""
    c = _catalog()
    w = InferenceWorkload(weight_format=c.formats.get("bf16"), kv_format=c.formats.get("bf16"),
                          profile=c.profiles.get("optimized"), prompt_tokens=prompt, output_tokens=256)
    # a PCIe card that needs pipeline stages, an 8-GPU NVSwitch server, a 72-GPU domain
    pairs = [(s, c.system_gpu(s)) for s in map(c.systems.get, ["pcie-rtx-4090", "hgx-h100", "gb200-nvl72"])]
    prices = load_prices(read_yaml(c.root / "costs.yaml"), None, resolve=c.gpus.get, resolve_system=c.systems.get)
    report = plan(c.models.get(model), pairs, w, Goal(concurrency=concurrency), prices)
    assert any(o.feasible for o in report.options)
    for option in report.options:
        _check_option(option)


def _check_option(o: PlanOption) -> None:
    if not o.feasible:
        return
    parts = [o.weights_per_gpu_bytes, o.kv_cache_per_gpu_bytes or 0, o.activation_per_gpu_bytes or 0,
             o.overhead_per_gpu_bytes, o.state_per_gpu_bytes]
    assert o.memory_per_gpu_bytes == sum(p for p in parts if p is not None)
    assert o.headroom_bytes == o.capacity_bytes - (o.memory_per_gpu_bytes or 0)
    # a stage of an expert-parallel layout is EP GPUs (EP ÷ TP attention groups of TP GPUs), else TP GPUs
    stage = max(o.tensor_parallel or 0, o.expert_parallel or 0)
    assert o.cards == (o.replicas or 0) * stage * (o.pipeline_parallel or 0)
