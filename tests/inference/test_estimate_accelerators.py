"""Estimates on unified-memory machines, consumer cards, TPUs and fp4 GPUs: the capacity each answers with, its
source, and fp4 peaks.

The point is the shipped data, so these take ``shipped_catalog``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from estimator import InferenceWorkload
from estimator.catalog.registry import Catalog
from estimator.inference.estimate import estimate
from estimator.notes import NoteCode

Make = Callable[..., InferenceWorkload]


@pytest.fixture
def make_workload(shipped_catalog: Catalog) -> Make:
    """A workload from the shipped formats and profiles (the test catalog has no fp4 formats)."""
    def make(dtype: str = "bf16") -> InferenceWorkload:
        formats, profiles = shipped_catalog.formats, shipped_catalog.profiles
        return InferenceWorkload(weight_format=formats.get(dtype), kv_format=formats.get("bf16"),
                                 profile=profiles.get("optimized"))

    return make


@pytest.mark.parametrize(
    ("gpu", "capacity", "bandwidth", "code"),
    [
        # macOS's default wired limit on a 128 GB Mac: 98,304 MiB × 2²⁰ = 96 GiB (75 % of 128 GiB)
        ("m4-max", 103_079_215_104, 546e9, NoteCode.CAPACITY_UNIFIED),
        # GB10: CUDA's total is MemTotal, 127,600,748 kB → 124,610 MiB × 2²⁰
        ("dgx-spark", 130_663_055_360, 273e9, NoteCode.CAPACITY_UNIFIED),
        # Google's 16 GiB HBM per chip: 16 × 2³⁰
        ("tpu-v5e", 17_179_869_184, 819e9, NoteCode.CAPACITY_INSTALLED),
        # 4 GDDR6 chips of 4 GiB: 16 × 2³⁰ (no nvidia-smi total on record)
        ("rtx-4060-ti-16gb", 17_179_869_184, 288e9, NoteCode.CAPACITY_INSTALLED),
        # nvidia-smi's name for the H100 SXM5, which reports 81,559 MiB × 2²⁰
        ("NVIDIA H100 80GB HBM3", 85_520_809_984, 3350e9, NoteCode.CAPACITY_REPORTED),
        # ROCm's 256 GiB: 256 × 2³⁰, not the marketed 256 × 10⁹
        ("mi325x", 274_877_906_944, 6000e9, NoteCode.CAPACITY_INSTALLED),
    ],
)
def test_llama_8b_answers_with_the_capacity_the_card_has(shipped_catalog: Catalog, make_workload: Make, gpu: str,
                                                        capacity: int, bandwidth: float, code: NoteCode) -> None:
    model = shipped_catalog.models.get("llama-3.1-8b")
    r = estimate(model, shipped_catalog.gpus.get(gpu), make_workload(), requested_gpu=gpu)
    assert r.memory.capacity_bytes == capacity
    assert r.gpu.bandwidth_bytes_per_s == bandwidth
    assert [a.values["capacity_bytes"] for a in r.assumptions if a.code is code] == [capacity]
    assert r.memory.fits is (capacity > 20e9)  # 16.1 GB of bf16 weights + KV + overhead: not on the 16 GiB cards


def test_unified_note_names_the_pool(shipped_catalog: Catalog, make_workload: Make) -> None:
    r = estimate(shipped_catalog.models.get("llama-3.1-8b"), shipped_catalog.gpus.get("m4-max"), make_workload())
    [unified] = [a for a in r.assumptions if a.code is NoteCode.CAPACITY_UNIFIED]
    assert unified.text == ("capacity is the share of the 128 GB unified memory the GPU may use: 96.0 GiB (the OS "
                            "and other programs take theirs out of it; --gpu-memory sets another)")


def test_gpu_memory_override_is_the_capacity(shipped_catalog: Catalog, make_workload: Make) -> None:
    mac = shipped_catalog.gpus.get("m4-max").with_memory(120 * 2**30)  # e.g. after sysctl iogpu.wired_limit_mb=122880
    r = estimate(shipped_catalog.models.get("llama-3.1-8b"), mac, make_workload())
    assert r.memory.capacity_bytes == 128_849_018_880  # 120 × 2³⁰
    assert [a.text for a in r.assumptions if a.code is NoteCode.CAPACITY_OVERRIDE] == [
        "capacity is --gpu-memory: 120.0 GiB per GPU"]


@pytest.mark.parametrize(("gpu", "peak"), [("b200", 9000e12), ("rtx-5090", 1676e12), ("mi355x", 10066.3e12),
                                           ("dgx-spark", 500e12)])
@pytest.mark.parametrize(("dtype", "model"), [("nvfp4", "llama-3.1-8b"), ("mxfp4", "mixtral-8x7b")])
def test_fp4_formats_use_the_fp4_peak(shipped_catalog: Catalog, make_workload: Make, gpu: str, peak: float,
                                      dtype: str, model: str) -> None:
    r = estimate(shipped_catalog.models.get(model), shipped_catalog.gpus.get(gpu), make_workload(dtype))
    assert r.gpu.compute_dtype == "fp4"
    assert r.gpu.peak_flop_per_s == peak
    assert not [w for w in r.warnings if w.code is NoteCode.COMPUTE_FALLBACK]


def test_fp4_on_a_card_without_it_falls_back_with_a_warning(shipped_catalog: Catalog, make_workload: Make) -> None:
    r = estimate(shipped_catalog.models.get("llama-3.1-8b"), shipped_catalog.gpus.get("h100"), make_workload("nvfp4"))
    assert r.gpu.compute_dtype == "fp8"
    assert [w.values["used"] for w in r.warnings if w.code is NoteCode.COMPUTE_FALLBACK] == ["fp8"]
