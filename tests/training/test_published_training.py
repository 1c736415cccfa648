"""Published multi-node training throughput reproduced within 15 % (tests/data/published/training.yaml).

15 % is issue 12's target for this comparison, and a tolerance is right here because both sides are measured:
the published figures are end-to-end throughput of real runs (data loading, optimizer and logging included),
rounded to three digits, and the profile's kernel figures were measured on an H200, not on these A100s.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from estimator.catalog.registry import Catalog

ROOT = Path(__file__).resolve().parents[2]


def _benchmark() -> ModuleType:
    path = ROOT / "benchmarks" / "published_training.py"
    spec = importlib.util.spec_from_file_location("published_training", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def comparisons(shipped_catalog: Catalog) -> list:  # type: ignore[type-arg]
    return list(_benchmark().compare(shipped_catalog))


def test_every_reproduced_case_is_within_15_percent(comparisons: list) -> None:  # type: ignore[type-arg]
    reproduced = [c for c in comparisons if c.reproduced]
    assert len(reproduced) >= 5
    assert len({c.source for c in reproduced}) >= 2  # two publications: the paper's Table 1 and the README run
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
