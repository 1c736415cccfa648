"""The GPU schema: which figure is the usable capacity, unified-memory machines, and the --gpu-memory override."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from estimator.catalog.specs import GpuSpec
from estimator.errors import WorkloadInvalid

BASE: dict[str, Any] = {
    "name": "Test Card 16GB", "vendor": "nvidia", "memory_type": "GDDR6", "memory_gb": 16, "bus_width_bits": 256,
    "data_rate_gbps": 14, "bandwidth_gb_per_s": 448, "dense_tflop_per_s": {"fp16": 100}, "interconnect": "PCIe4",
    "sources": ["test"],
}


def card(**changes: Any) -> GpuSpec:
    return GpuSpec.model_validate({**BASE, **changes})


def test_capacity_prefers_report_then_installed_gib_then_marketed_gb() -> None:
    assert card().memory_bytes == 16_000_000_000  # 16 GB × 10⁹
    assert card().capacity_source == "marketed"
    assert card(memory_gib=16).memory_bytes == 17_179_869_184  # 16 × 2³⁰
    assert card(memory_gib=16, reported_memory_mib=16_303).memory_bytes == 17_094_934_528  # 16,303 × 2²⁰
    assert card(memory_gib=16, reported_memory_mib=16_303).capacity_source == "reported"


def test_unified_machine_uses_the_gpu_share() -> None:
    mac = card(memory_type="LPDDR5X", vendor="apple", memory_gb=128, unified_memory=True, gpu_memory_mib=98_304)
    assert mac.memory_bytes == 103_079_215_104  # 98,304 MiB × 2²⁰ = 96 GiB, 75 % of 128 GiB
    assert mac.capacity_source == "unified-share"


@pytest.mark.parametrize(("changes", "message"), [
    ({"unified_memory": True}, "unified_memory needs gpu_memory_mib"),
    ({"gpu_memory_mib": 8_000}, "gpu_memory_mib is for unified_memory machines"),
    ({"unified_memory": True, "gpu_memory_mib": 20_000}, "more than the 16 GB installed"),
    ({"reported_memory_mib": 1_630}, "reported_memory_mib 1,630 is 11% of the marketed 16 GB"),
    ({"memory_gib": 160}, "memory_gib 160 is 1074% of the marketed 16 GB"),
])
def test_inconsistent_memory_keys_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        card(**changes)


def test_gpu_memory_override_replaces_the_capacity_on_a_copy() -> None:
    original = card(reported_memory_mib=16_303)
    smaller = original.with_memory(12 * 2**30)
    assert smaller.memory_bytes == 12_884_901_888  # 12 × 2³⁰
    assert smaller.capacity_source == "override"
    assert original.memory_bytes == 16_303 * 2**20  # the catalog's card is unchanged
    assert original.with_memory(16 * 2**30).memory_bytes == 17_179_869_184  # the marketed 16 GB read as GiB: allowed
    for wrong in (0, 16 * 2**30 + 1):
        with pytest.raises(WorkloadInvalid, match="at most the 16 GB installed on Test Card 16GB"):
            original.with_memory(wrong)


def test_power_may_be_unpublished() -> None:
    assert card().tdp_w is None
    assert card(tdp_w=70).tdp_w == 70
