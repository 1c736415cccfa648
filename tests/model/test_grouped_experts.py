"""A prefill's routed experts under transformers' grouped_mm forward (`estimator.model.grouped_experts`, the `hf`
profiles' `grouped_experts`, docs/accuracy.md, "Prefill kernels"): exact work counts, the time rule, and a prefill that
moves its routed experts out of the dense terms without changing the roofline bound."""

from __future__ import annotations

from typing import Any

import pytest

from estimator import default_catalog
from estimator.catalog.profiles import GroupedExperts
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload
from estimator.model.grouped_experts import ExpertWork, expert_work, experts_s, routed_expert_params


def test_qwen3_moe_routed_work_is_counted_exactly() -> None:
    """qwen3-30b-a3b: 48 layers × 128 experts × 3 × 2,048 × 768 parameters; 2,048 tokens pick 8 experts each, so
    every expert is hit (1 − (1 − 8/128)^2048 rounds to 1)."""
    catalog = default_catalog()
    arch = catalog.models.get("qwen3-30b-a3b").arch
    assert arch is not None
    params = 48 * 128 * 3 * 2048 * 768
    assert routed_expert_params(arch) == params == 28_991_029_248
    work = expert_work(arch, catalog.formats.get("bf16"), 1, 2048)
    assert work is not None
    assert work.flops == 2 * params * 8 / 128 * 2048
    assert work.weight_bytes == pytest.approx(params * 2, rel=1e-12)
    pairs = 2048 * 8 * 48
    assert (work.pair_hidden, work.pair_ffn, work.token_hidden, work.layers) == (
        pairs * 2048, pairs * 768, 2048 * 2048 * 48, 48)
    # tensor parallel 2: FLOPs, weights and expert widths halve; the dispatch over the hidden width does not
    half = expert_work(arch, catalog.formats.get("bf16"), 2, 2048)
    assert half is not None and (half.flops, half.pair_ffn, half.pair_hidden) == (
        work.flops / 2, work.pair_ffn / 2, work.pair_hidden)
    dense = catalog.models.get("llama-3.1-8b").arch
    assert dense is not None and expert_work(dense, catalog.formats.get("bf16"), 1, 2048) is None


def test_the_time_rule_adds_weights_flops_and_passes() -> None:
    spec = GroupedExperts(weight_efficiency=0.5, flop_efficiency=0.5, pair_hidden_passes=2, pair_ffn_passes=4,
                          token_hidden_passes=8, per_layer_s=1e-3)
    profile = default_catalog().profiles.get("hf").model_copy(update={"grouped_experts": spec})
    work = ExpertWork(flops=1e12, weight_bytes=1e9, pair_hidden=1e8, pair_ffn=1e8, token_hidden=1e8, layers=2)
    # 1e9 B / (1e12 × 0.5) + 1e12 / (1e15 × 0.5) + (2 + 4 + 8) × 1e8 × 2 B / (1e12 × 0.5) + 2 × 1 ms
    assert experts_s(work, profile, 1e15, 1e12, 2, 0.5e12) == pytest.approx(2e-3 + 2e-3 + 5.6e-3 + 2e-3, rel=1e-12)
    assert experts_s(work, profile.model_copy(update={"grouped_experts": None}), 1e15, 1e12, 2, 0.5e12) == 0


def _prefill(profile: Any, model: str = "qwen3-30b-a3b") -> Any:
    catalog = default_catalog()
    fmt = catalog.formats.get("bf16")
    # 8,192 tokens: GPU-bound (at 2,048 the host's dispatch of qwen3-30b-a3b's counted operations sets the time)
    workload = InferenceWorkload(batch=1, prompt_tokens=8192, output_tokens=0, weight_format=fmt, kv_format=fmt,
                                 profile=profile)
    return estimate(catalog.models.get(model), catalog.gpus.get("h200"), workload)


def test_a_moe_prefill_takes_its_routed_experts_apart_and_keeps_its_bound() -> None:
    hf = default_catalog().profiles.get("hf")
    grouped, dense = _prefill(hf), _prefill(hf.model_copy(update={"grouped_experts": None}))
    assert grouped.time.prefill_s > dense.time.prefill_s
    # the bound keeps every FLOP and weight byte; the dense MLP's elementwise passes for the routed experts, which the
    # dispatch's replace, leave it (a bound may only fall: it must stay below every measurement)
    assert grouped.time.prefill_flops == pytest.approx(dense.time.prefill_flops, rel=1e-12)
    assert grouped.time.prefill_bound_s <= dense.time.prefill_bound_s
    # a dense model and the optimized profile (no grouped experts) do not move
    llama = _prefill(hf, "llama-3.1-8b")
    plain = _prefill(hf.model_copy(update={"grouped_experts": None}), "llama-3.1-8b")
    assert llama.time.prefill_s == plain.time.prefill_s
    assert default_catalog().profiles.get("optimized").grouped_experts is None
