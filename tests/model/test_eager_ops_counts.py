"""Every family's eager operations (docs/accuracy.md, *Host dispatch*): the `hf` and `hf-graph` profiles carry the
counts of lab/measure/count_eager_ops.py (tests/data/measured/eager-ops-cpu.json), whose CPU count gives the five
families the H200 rows counted exactly as they did; a counted family's step is its operations, so two models of one
depth and different families no longer take the same host time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator import InferenceWorkload, default_catalog, estimate
from estimator.model.phases import eager_ops
from tests.lab_modules import lab_module, needs_torch_and_transformers, skip_unless_counted_transformers

COUNTS = Path(__file__).resolve().parent.parent / "data" / "measured" / "eager-ops-cpu.json"
GPU_COUNTED = ("llama", "qwen2", "mistral", "gemma2", "gpt2")


def _counted() -> dict[str, dict[str, list[float]]]:
    return dict(json.loads(COUNTS.read_text(encoding="utf-8"))["families"])


def test_the_cpu_count_is_the_h200_s_for_the_families_it_counted() -> None:
    eager_ops = lab_module("fit.eager_ops_per_layer")
    assert eager_ops.cpu_matches_gpu() == (25, 25)


@pytest.mark.parametrize("name", ["hf", "hf-graph"])
def test_the_profiles_carry_every_counted_family(name: str) -> None:
    profile = default_catalog().profiles.get(name)
    for family, found in _counted().items():
        assert list(profile.eager_ops_per_layer[family]) == found["per_layer"], family
        assert list(profile.eager_ops_outside_layers[family]) == found["outside"], family


def test_two_families_of_one_depth_take_their_own_host_time() -> None:
    """qwen3-8b (36 layers × 79 operations + 51, grouped KV heads) and gemma-2-9b (42 × 87 + 85): each decode step's
    host time is its own operations × 16.09 µs, not layers × 0.966 ms."""
    catalog = default_catalog()
    hf, bf16 = catalog.profiles.get("hf"), catalog.formats.get("bf16")
    w = InferenceWorkload(batch=1, prompt_tokens=1024, output_tokens=1, weight_format=bf16, kv_format=bf16, profile=hf)
    for model, ops in (("qwen3-8b", 36 * 79 + 51), ("gemma-2-9b", 42 * 87 + 85), ("phi-3-mini", 32 * 66 + 54)):
        arch = catalog.models.get(model).arch
        assert arch is not None
        assert eager_ops(arch, w, decode=True) == ops, model
        report = estimate(catalog.models.get(model), catalog.gpus.get("h200"), w)
        assert report.time.decode_step_s == pytest.approx(ops * hf.host_per_op_s, rel=1e-9), model


@needs_torch_and_transformers
def test_the_count_reproduces_under_the_same_transformers() -> None:
    """Re-counts llama (GPU-counted) and phi3 where transformers 5.17 is installed (the count is of its code)."""
    skip_unless_counted_transformers()
    count_eager_ops = lab_module("measure.count_eager_ops")
    for family in ("llama", "phi3"):
        assert count_eager_ops.family_counts(family) == _counted()[family]
