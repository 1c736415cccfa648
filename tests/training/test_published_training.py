"""Published multi-node training throughput reproduced within 15 % (tests/data/published/training.yaml).

15 % is the target docs/accuracy.md states for this comparison, and a tolerance is right here because both sides
are measured: the published figures are end-to-end throughput of real runs (data loading, optimizer and logging
included), rounded to three or four digits, and the profile's kernel figures were measured on an H200, not on these
A100s and H100s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.registry import Catalog
from tests.lab_modules import lab_module

ROOT = Path(__file__).resolve().parents[2]


def _benchmark() -> Any:
    return lab_module("accuracy.published_training")


@pytest.fixture(scope="module")
def comparisons(shipped_catalog: Catalog) -> list:  # type: ignore[type-arg]
    return list(_benchmark().compare(shipped_catalog))


def test_every_reproduced_case_is_within_15_percent(comparisons: list) -> None:  # type: ignore[type-arg]
    reproduced = [c for c in comparisons if c.reproduced]
    assert len(reproduced) >= 14
    # three publications: the paper's Table 1 and the README run (Megatron-LM, A100), and an independent one
    # (MosaicML's llm-foundry: another framework, FSDP instead of TP/PP, on H100)
    assert len({c.source for c in reproduced}) >= 3
    assert {c.report.gpu.name for c in reproduced} >= {"NVIDIA A100 SXM4 80GB", "NVIDIA H100 SXM5 80GB"}
    misses = {c.name: f"{c.error:+.1%}" for c in reproduced if abs(c.error) > 0.15}
    assert not misses


def test_published_throughput_follows_the_sources_flop_count() -> None:
    bench = _benchmark()
    # GPT-3 175B: 96 · 96 · 12288² · (1 + 2048/73728 + 51200/(16 · 96 · 12288)) FLOPs per token; 138 TFLOP/s per
    # GPU over 1,536 × 2,048 tokens per iteration on 1,024 GPUs gives the README's "around 32 seconds".
    per_token = bench.megatron_flops_per_token(12288, 96)
    seconds = 1536 * 2048 * per_token / (138e12 * 1024)
    assert 31.5 < seconds < 32.5


def test_the_step_is_split_into_its_parts(comparisons: list) -> None:  # type: ignore[type-arg]
    gpt3 = next(c for c in comparisons if c.name == "gpt-3-175b")
    t = gpt3.report.time
    assert t.tp_communication_s > 0 and t.pp_communication_s > 0 and t.dp_communication_s > 0
    # 1F1B over 16 stages and 1,536 / 8 = 192 micro-batches: 15 / 207 of the compute is bubble
    assert t.pipeline_bubble_fraction == pytest.approx(15 / 207)
    assert t.step_s == pytest.approx(t.compute_s + t.optimizer_s + t.communication_s)
    assert t.exposed_communication_s == t.communication_s  # the megatron profile overlaps nothing


def test_mosaicml_shapes_have_the_tables_parameter_counts() -> None:
    """The GPT-2 layout at the mpt-*.yaml shapes is the model llm-foundry counted: its NumParams, exactly."""
    from estimator.model.inventory import param_count

    bench = _benchmark()
    for (hidden, heads, layers), params in {(8192, 64, 80): 64_862_437_376, (7168, 56, 48): 29_975_214_080,
                                            (5120, 40, 40): 12_853_954_560}.items():
        arch = bench.gpt_model("mpt", hidden, heads, layers, vocab=50_368).arch
        assert arch is not None
        # 12 l h² + 13 l h (biases, norms) + (50,368 + 2,048) h + 2 h (final norm)
        assert param_count(arch) == 12 * layers * hidden**2 + 13 * layers * hidden + 52_416 * hidden + 2 * hidden
        assert param_count(arch) == params
