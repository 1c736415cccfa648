"""The elementwise passes a family's transformers forward makes (`phases.elementwise_elements_per_layer`, the hf
profiles' ``elementwise_passes_by_family``): the shipped counts are the trace's, and each dtype takes its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator import default_catalog
from estimator.catalog.architecture import Architecture
from estimator.catalog.registry import model_from_mapping
from estimator.model.phases import elementwise_elements_per_layer
from tests.lab_modules import lab_module, needs_torch_and_transformers, skip_unless_counted_transformers

TRACE = Path(__file__).resolve().parents[1] / "data" / "measured" / "elementwise-passes.json"


def _arch(model_type: str) -> Architecture:
    config = {"model_type": model_type, "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 2,
              "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 32000}
    if model_type == "gpt2":
        config = {"model_type": "gpt2", "n_embd": 1024, "n_head": 8, "n_layer": 2, "n_inner": 4096, "vocab_size": 50257,
                  "n_positions": 1024}
    arch = model_from_mapping({"name": "t", "config": config}, Path("t")).arch
    assert arch is not None
    return arch


@pytest.mark.parametrize("profile", ["hf", "hf-graph"])
def test_the_shipped_counts_are_the_trace_of_the_transformers_the_profile_describes(profile: str) -> None:
    trace = json.loads(TRACE.read_text(encoding="utf-8"))
    assert trace["transformers"] == "5.17.0"  # the version the hf profiles name
    shipped = default_catalog().profiles.get(profile).elementwise_passes_by_family
    assert {family: list(passes) for family, passes in shipped.items()} == trace["passes"]
    # of those, the operations on TensorIterator's non-vectorized kernels (count_elementwise.runs_strided)
    strided = default_catalog().profiles.get(profile).elementwise_strided_by_family
    assert {family: list(counts) for family, counts in strided.items()} == trace["strided"]


@pytest.mark.parametrize(("model_type", "fp32", "elements"), [
    ("llama", False, 63 * 1024 + 5 * 4096),
    ("llama", True, 41 * 1024 + 5 * 4096),  # no fp32 upcast in RMSNorm
    ("gemma2", False, 107 * 1024 + 5 * 4096),  # four norms per layer
    ("gemma2", True, 55 * 1024 + 5 * 4096),
    ("gpt2", False, 10 * 1024 + 18 * 4096),  # LayerNorm as one kernel, GELU as a chain over the FFN width
    ("qwen3", False, 99 * 1024 + 5 * 4096),  # per-head q and k norms, traced from qwen3-8b's config
    ("granite", False, 65 * 1024 + 5 * 4096),  # not traced: the profile's own count, in every dtype
    ("granite", True, 65 * 1024 + 5 * 4096),
])
def test_a_family_moves_its_own_passes_in_its_dtype(model_type: str, fp32: bool, elements: int) -> None:
    hf = default_catalog().profiles.get("hf")
    assert elementwise_elements_per_layer(_arch(model_type), hf, 1, fp32=fp32) == elements


@needs_torch_and_transformers
def test_the_trace_reproduces_under_the_same_transformers() -> None:
    """Re-counts llama where transformers 5.17 is installed (the count depends on its modeling code)."""
    skip_unless_counted_transformers()
    import torch

    count_elementwise = lab_module("measure.count_elementwise")

    assert count_elementwise.passes("llama", torch.bfloat16, (128, 64)) == (63.0, 5.0)
    assert count_elementwise.counts("llama", torch.bfloat16, (128, 64))[1:] == [(39.0, 0.0), (15.0, 0.0)]
