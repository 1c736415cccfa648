"""The NVML probe against a fake pynvml, catalog matching, and the fake probe."""

from __future__ import annotations

import pytest

from estimator.catalog.registry import Catalog
from estimator.errors import DeviceUnavailable
from estimator.live.probe import FakeProbe, LiveGpu, NvmlProbe, Snapshot, compare_with_spec, match_catalog
from estimator.units import MIB
from tests.fake_nvml import DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND, FakeDevice, FakeNvml


def read(nvml: FakeNvml) -> Snapshot:
    probe = NvmlProbe(nvml)
    try:
        return probe.read()
    finally:
        probe.close()


def live(name: str = "NVIDIA H200", total: int = 150_754_820_096, **fields: object) -> LiveGpu:
    base: dict[str, object] = {
        "index": 0, "name": name, "uuid": None, "memory_total_bytes": total, "memory_used_bytes": 0,
        "memory_free_bytes": total, "memory_reserved_bytes": None, "bus_width_bits": None,
        "max_mem_clock_mhz": None, "mem_clock_mhz": None, "pcie_gen_max": None, "pcie_width_max": None,
        "power_limit_w": None, "utilization_gpu_pct": None, "utilization_memory_pct": None, "mig_enabled": None}
    base.update(fields)
    return LiveGpu.model_validate(base)


def test_h200_reads_every_field() -> None:
    snap = read(FakeNvml())
    assert snap.driver_version == "580.159.04"
    assert snap.cuda_driver_version == "13.0"
    (gpu,) = snap.gpus
    assert gpu.name == "NVIDIA H200"
    assert gpu.memory_total_bytes == 150_754_820_096
    assert gpu.memory_total_bytes // MIB == 143_771  # nvidia-smi's figure
    assert gpu.memory_reserved_bytes == 644_939_776
    assert gpu.bus_width_bits == 6016
    assert gpu.max_mem_clock_mhz == 3201
    assert gpu.power_limit_w == 700.0
    assert (gpu.pcie_gen_max, gpu.pcie_width_max) == (5, 16)
    assert gpu.mig_enabled is False
    assert gpu.unavailable == ()


def test_implied_bandwidth_is_bus_over_8_times_clock_times_2() -> None:
    gpu = read(FakeNvml()).gpus[0]
    assert gpu.implied_bandwidth_bytes_per_s == 4_814_304_000_000  # 6016 / 8 × 3,201 MHz × 2 = 752 B × 6.402e9 /s
    assert gpu.bandwidth_arithmetic == "6016 bit / 8 × 3,201 MHz × 2 = 4.814 TB/s"


def test_unsupported_queries_become_none_and_are_listed() -> None:
    device = FakeDevice(reserved=None, bus_width=None, power_mw=None, util=None, mig=None)
    gpu = read(FakeNvml([device])).gpus[0]
    assert gpu.memory_reserved_bytes is None
    assert gpu.bus_width_bits is None
    assert gpu.implied_bandwidth_bytes_per_s is None
    assert gpu.bandwidth_arithmetic is None
    assert gpu.power_limit_w is None
    assert gpu.utilization_gpu_pct is None
    assert gpu.mig_enabled is None
    assert any(u.startswith("memory bus width: Not Supported") for u in gpu.unavailable)
    assert len(gpu.unavailable) == 5


def test_missing_driver_facts_are_none() -> None:
    snap = read(FakeNvml(driver=None, cuda=None))
    assert snap.driver_version is None
    assert snap.cuda_driver_version is None


def test_several_gpus_and_mig() -> None:
    devices = [FakeDevice(), FakeDevice(name="NVIDIA A100-SXM4-40GB", total=42_949_672_960, mig=(1, 1),
                                        processes=[(1234, 2 * 2**30, "python3"), (99, None, None)])]
    snap = read(FakeNvml(devices))
    assert [g.index for g in snap.gpus] == [0, 1]
    a100 = snap.gpus[1]
    assert a100.mig_enabled is True
    assert a100.processes[0].pid == 1234
    assert a100.processes[0].name == "python3"
    assert a100.processes[0].used_bytes == 2 * 2**30
    assert a100.processes[1].name is None  # NVML could not name it
    assert a100.processes[1].used_bytes is None


@pytest.mark.parametrize(("error", "message"), [
    (DRIVER_NOT_LOADED, "the NVIDIA driver is not loaded"),
    (LIBRARY_NOT_FOUND, "libnvidia-ml.so was not found"),
    ("Unknown Error", "Unknown Error"),
])
def test_init_failures_are_device_unavailable(error: str, message: str) -> None:
    with pytest.raises(DeviceUnavailable, match=message):
        NvmlProbe(FakeNvml(init_error=error))


def test_no_gpu_and_count_failure() -> None:
    with pytest.raises(DeviceUnavailable, match="sees no GPU"):
        read(FakeNvml([]))
    with pytest.raises(DeviceUnavailable, match="cannot list GPUs"):
        read(FakeNvml(count_error="GPU is lost"))


def test_close_shuts_nvml_down_once() -> None:
    nvml = FakeNvml()
    probe = NvmlProbe(nvml)
    probe.close()
    probe.close()
    assert nvml.shutdowns == 1


@pytest.mark.parametrize(("name", "total_mib", "expected"), [
    ("NVIDIA H200", 143_771, "NVIDIA H200 SXM 141GB"),
    ("NVIDIA H200 NVL", 143_771, "NVIDIA H200 NVL 141GB"),
    ("NVIDIA H100 80GB HBM3", 81_559, "NVIDIA H100 SXM5 80GB"),
    ("NVIDIA H100 PCIe", 81_559, "NVIDIA H100 PCIe 80GB"),
    ("NVIDIA A100-SXM4-40GB", 40_960, "NVIDIA A100 SXM4 40GB"),
    ("NVIDIA A100-SXM4-80GB", 81_920, "NVIDIA A100 SXM4 80GB"),
    ("NVIDIA GeForce RTX 4090", 24_564, "NVIDIA GeForce RTX 4090 24GB"),
    ("NVIDIA GeForce RTX 3090", 24_576, "NVIDIA GeForce RTX 3090 24GB"),
    ("NVIDIA GeForce RTX 3090 Ti", 24_564, "NVIDIA GeForce RTX 3090 Ti 24GB"),
    ("Tesla T4", 15_360, "NVIDIA T4 16GB"),
    ("NVIDIA RTX 6000 Ada Generation", 49_140, "NVIDIA RTX 6000 Ada Generation 48GB"),
    ("NVIDIA GeForce RTX 4090", 49_140, "NVIDIA GeForce RTX 4090 48GB (modified)"),  # one name, two memory sizes
    ("NVIDIA GeForce RTX 4090 D", 24_564, "NVIDIA GeForce RTX 4090 D 24GB"),
    ("NVIDIA A800-SXM4-80GB", 81_920, "NVIDIA A800 SXM4 80GB"),
    ("NVIDIA H800", 81_559, "NVIDIA H800 SXM5 80GB"),
    ("NVIDIA B300 SXM6 AC", 275_040, "NVIDIA B300 288GB"),
])
def test_catalog_match(shipped_catalog: Catalog, name: str, total_mib: int, expected: str) -> None:
    spec = match_catalog(live(name, total_mib * MIB), shipped_catalog)
    assert spec is not None
    assert spec.name == expected


@pytest.mark.parametrize(("name", "total_mib"), [
    ("NVIDIA H200", 40_000),  # memory far from every H200
    ("NVIDIA Quadro P400", 2_048),  # not in the catalog
    ("", 1_000),
])
def test_no_catalog_match(shipped_catalog: Catalog, name: str, total_mib: int) -> None:
    assert match_catalog(live(name, total_mib * MIB), shipped_catalog) is None


def test_spec_vs_live_differences(catalog: Catalog) -> None:
    gpu = read(FakeNvml()).gpus[0]
    spec = match_catalog(gpu, catalog)
    assert spec is not None
    rows = {c.quantity: c for c in compare_with_spec(gpu, spec)}
    assert rows["memory total"].difference == 0
    assert rows["memory bus width"].difference == pytest.approx((6016 - 6144) / 6144)
    assert rows["memory bandwidth"].live == pytest.approx(4814.304)
    assert rows["memory bandwidth"].difference == pytest.approx(4814.304 / 4800 - 1)
    assert rows["power limit"].difference == 0
    missing = compare_with_spec(live(), spec)
    assert {c.quantity: c.difference for c in missing}["memory bus width"] is None


def test_fake_probe_repeats_last_snapshot_and_raises() -> None:
    snaps = [Snapshot(driver_version="1", cuda_driver_version=None, gpus=(live(),)),
             Snapshot(driver_version="2", cuda_driver_version=None, gpus=(live(),))]
    probe = FakeProbe(snaps)
    assert [probe.read().driver_version for _ in range(3)] == ["1", "2", "2"]
    probe.close()
    assert probe.closed
    with pytest.raises(DeviceUnavailable):
        FakeProbe(error=DeviceUnavailable("no driver")).read()
    with pytest.raises(ValueError, match="needs snapshots"):
        FakeProbe()
