"""The megatron profile's FP8 GEMM efficiency is the measured FP8/bf16 ratio applied to its bf16 figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.catalog.registry import Catalog

MEASURED = Path(__file__).resolve().parent.parent / "data/measured/h200-fp8-gemm.jsonl"
FP8_LINEARS = ("qkv", "proj", "fc1", "fc2")  # Megatron-LM's output layer stays bf16 (training.states.fp8_weight_numel)


def test_fp8_matmul_efficiency_is_derived_from_the_h200_measurement(shipped_catalog: Catalog) -> None:
    rows = [json.loads(line) for line in MEASURED.read_text().splitlines()]
    gemms = [r for r in rows if r.get("model") == "llama-2-7b" and r.get("linear") in FP8_LINEARS]
    assert len(gemms) == 4 * 3 * 2  # 4 linears × forward, input gradient, weight gradient × bf16, FP8
    flops = sum(2 * r["m"] * r["n"] * r["k"] for r in gemms if r["dtype"] == "bf16")
    seconds = {d: sum(r["seconds"] for r in gemms if r["dtype"] == d) for d in ("bf16", "fp8")}
    h200 = shipped_catalog.gpus.get("h200")
    bf16_peak, fp8_peak = h200.peak_flop_per_s("bf16"), h200.peak_flop_per_s("fp8")
    assert bf16_peak is not None and fp8_peak is not None
    ratio = (flops / seconds["fp8"] / fp8_peak) / (flops / seconds["bf16"] / bf16_peak)
    assert ratio == pytest.approx(0.919, abs=5e-4)
    megatron = shipped_catalog.profiles.get("megatron")
    # three significant figures of 0.65 × the measured ratio
    assert megatron.fp8_matmul_flop_efficiency == round(megatron.matmul_flop_efficiency * ratio, 3) == 0.597
