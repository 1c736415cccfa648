"""The shipped spec files are data: each validates, is sourced, and holds the facts users rely on."""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator.catalog.files import default_specs_dir, read_yaml
from estimator.catalog.registry import Catalog
from estimator.model.inventory import param_count

SPECS = default_specs_dir()
GPU_FILES = sorted((SPECS / "gpus").glob("*.yaml"))
MODEL_FILES = sorted((SPECS / "models").glob("*.yaml"))


@pytest.fixture(scope="module")
def catalog(shipped_catalog: Catalog) -> Catalog:
    """This module tests the shipped files, so its ``catalog`` is the packaged one (not tests/data/catalog)."""
    return shipped_catalog


def test_catalog_sizes(catalog: Catalog) -> None:
    assert len(catalog.gpus) >= 60
    assert len(catalog.models) >= 30
    assert {g.memory_type for g in catalog.gpus} >= {"GDDR6", "GDDR6X", "GDDR7", "HBM2", "HBM2e", "HBM3", "HBM3e",
                                                     "LPDDR5", "LPDDR5X"}
    assert {g.vendor for g in catalog.gpus} == {"nvidia", "amd", "intel", "apple", "google"}
    assert {g.name for g in catalog.gpus if g.unified_memory} >= {
        "Apple M2 Ultra (76-core GPU, 192GB)", "Apple M3 Max (40-core GPU, 128GB)", "Apple M4 Max (40-core GPU, 128GB)",
        "NVIDIA DGX Spark (GB10, 128GB)", "NVIDIA Jetson AGX Orin 64GB", "NVIDIA Jetson AGX Thor (T5000, 128GB)"}


@pytest.mark.parametrize("path", GPU_FILES, ids=lambda p: p.stem)
def test_gpu_file(path: Path, catalog: Catalog) -> None:
    gpu = catalog.gpus.get(read_yaml(path)["name"])
    assert path.stem.startswith(gpu.vendor + "-")
    assert gpu.sources
    mismatch = abs(gpu.derived_bandwidth_gb_per_s - gpu.bandwidth_gb_per_s) / gpu.bandwidth_gb_per_s
    assert mismatch <= 0.03 or gpu.bandwidth_mismatch_reason
    if gpu.capacity_source == "marketed" or gpu.unified_memory:
        assert gpu.notes  # a capacity that is not a device report says why, and how uncertain it is


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_model_file_counts_equal_transformers(path: Path, catalog: Catalog) -> None:
    model = catalog.models.get(path.stem)
    assert model.name == path.stem
    assert model.sources
    assert model.arch is not None
    assert model.hf_params is not None
    # hf_params is transformers' own meta-device count (tools/hf_param_count.py); ours must equal it exactly.
    assert param_count(model.arch) == model.hf_params


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("a100", "NVIDIA A100 SXM4 80GB"),
        ("h100", "NVIDIA H100 SXM5 80GB"),
        ("4090", "NVIDIA GeForce RTX 4090 24GB"),
        ("rtx4090", "NVIDIA GeForce RTX 4090 24GB"),
        ("RTX-4090", "NVIDIA GeForce RTX 4090 24GB"),
        ("h200", "NVIDIA H200 SXM 141GB"),
    ],
)
def test_aliases_resolve_to_one_card(catalog: Catalog, alias: str, name: str) -> None:
    assert catalog.gpus.get(alias).name == name


def test_rtx_4090_is_gddr6x_at_1008_gb_per_s(catalog: Catalog) -> None:
    gpu = catalog.gpus.get("rtx-4090")
    assert gpu.memory_type == "GDDR6X"
    assert gpu.bus_width_bits == 384
    assert gpu.data_rate_gbps == 21
    assert gpu.derived_bandwidth_gb_per_s == 1008  # 384 / 8 × 21, never × 2 again
    assert gpu.bandwidth_bytes_per_s == 1_008_000_000_000


def test_h200_capacity_is_what_the_device_reports(catalog: Catalog) -> None:
    assert catalog.gpus.get("h200").memory_bytes == 143_771 * 2**20  # nvidia-smi 143771MiB


def test_dense_not_sparse_tflops(catalog: Catalog) -> None:
    assert catalog.gpus.get("h100").dense_tflop_per_s["bf16"] == 989.4  # not the sparse 1,979


def test_every_format_and_profile_is_sourced(catalog: Catalog) -> None:
    for fmt in catalog.formats:
        assert fmt.sources, fmt.name
    for profile in catalog.profiles:
        assert profile.sources, profile.name
    assert {p.name for p in catalog.profiles} >= {"optimized", "hf"}


@pytest.mark.parametrize(
    ("smi_name", "name"),
    [
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"),  # nvidia-smi's name for the SXM5 part
        ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090 24GB"),
        ("NVIDIA A10G", "NVIDIA A10G 24GB"),
        ("AMD Instinct MI300X", "AMD Instinct MI300X 192GB"),  # rocm-smi / torch.cuda.get_device_name
        ("Tesla V100-SXM2-32GB", "NVIDIA V100 SXM2 32GB"),
        ("HL-225", "Intel Gaudi 2 96GB"),  # hl-smi
    ],
)
def test_device_tool_names_are_aliases(catalog: Catalog, smi_name: str, name: str) -> None:
    assert catalog.gpus.get(smi_name).name == name


@pytest.mark.parametrize(
    ("alias", "capacity"),
    [
        ("mi325x", 274_877_906_944),  # ROCm's table: 256 GiB = 256 × 2³⁰, not the marketed 256 × 10⁹
        ("mi355x", 309_237_645_312),  # 288 GiB = 288 × 2³⁰
        ("mi250x", 68_719_476_736),  # one GCD: 64 GiB = 64 × 2³⁰
        ("gaudi2", 103_079_215_104),  # hl-smi 98,304 MiB × 2²⁰
        ("gaudi3", 137_438_953_472),  # hl-smi 131,072 MiB × 2²⁰
    ],
)
def test_capacity_counts_gib_where_the_tools_do(catalog: Catalog, alias: str, capacity: int) -> None:
    assert catalog.gpus.get(alias).memory_bytes == capacity


def test_datasheet_errors_stay_fixed(catalog: Catalog) -> None:
    assert catalog.gpus.get("a10g").dense_tflop_per_s["fp32"] == 35  # 80 SMs × 128 × 2 × 1.71 GHz, not the A10's 31.2
    gaudi3 = catalog.gpus.get("gaudi3").dense_tflop_per_s
    assert gaudi3["fp16"] == 459 < gaudi3["bf16"] == 1835  # the MME's fp16 is the tf32 rate, not the bf16 one


@pytest.mark.parametrize(("alias", "fp4"), [("b200", 9000), ("gb200", 10000), ("rtx-5090", 1676),
                                            ("rtx-pro-6000", 2000), ("mi355x", 10066.3)])
def test_fp4_cards_list_their_fp4_rate(catalog: Catalog, alias: str, fp4: float) -> None:
    assert catalog.gpus.get(alias).dense_tflop_per_s["fp4"] == fp4


SYSTEM_FILES = sorted((SPECS / "systems").glob("*.yaml"))


@pytest.mark.parametrize("path", SYSTEM_FILES, ids=lambda p: p.stem)
def test_system_file(path: Path, catalog: Catalog) -> None:
    system = catalog.systems.get(path.stem)
    assert system.name == path.stem
    assert system.sources
    gpu = catalog.system_gpu(system)  # the GPU it names is in specs/gpus
    assert system.gpus_per_node % system.domain_gpus == 0
    assert system.server_power_w > (gpu.tdp_w or 0) * system.gpus_per_node  # the host draws power too
    if system.intra_node_link == "pcie":
        assert system.domain_gpus == 1
    if system.price_usd is None:
        assert system.notes and "price" in system.notes  # a missing price is said, not silent


def test_the_systems_people_buy_are_in_the_catalog(catalog: Catalog) -> None:
    wanted = {  # system: (GPU, GPUs per node, GPUs one link domain joins)
        "hgx-h100": ("NVIDIA H100 SXM5 80GB", 8, 8), "hgx-h200": ("NVIDIA H200 SXM 141GB", 8, 8),
        "hgx-b200": ("NVIDIA B200 180GB", 8, 8), "hgx-b300": ("NVIDIA B300 288GB", 8, 8),
        "gb200-nvl72": ("NVIDIA GB200 (per Blackwell GPU, NVL72)", 72, 72),
        "gb300-nvl72": ("NVIDIA GB300 (per Blackwell Ultra GPU, NVL72)", 72, 72),
        "pcie-h100-nvl": ("NVIDIA H100 NVL 94GB", 8, 2), "pcie-h200-nvl": ("NVIDIA H200 NVL 141GB", 8, 4),
        "pcie-h200-nvl-2way": ("NVIDIA H200 NVL 141GB", 8, 2), "pcie-l40s": ("NVIDIA L40S 48GB", 8, 1),
        "pcie-rtx-pro-6000": ("NVIDIA RTX PRO 6000 Blackwell 96GB", 8, 1),
        "pcie-rtx-4090": ("NVIDIA GeForce RTX 4090 24GB", 8, 1),
        "mi300x-platform": ("AMD Instinct MI300X 192GB", 8, 8), "mi325x-platform": ("AMD Instinct MI325X 256GB", 8, 8),
        "mi355x-platform": ("AMD Instinct MI355X 288GB", 8, 8), "gaudi3-hls": ("Intel Gaudi 3 128GB", 8, 8),
    }
    for name, (gpu, per_node, domain) in wanted.items():
        system = catalog.systems.get(name)
        assert (catalog.system_gpu(system).name, system.gpus_per_node, system.domain_gpus) == (gpu, per_node, domain)


def test_one_default_system_per_gpu(catalog: Catalog) -> None:
    defaults = [catalog.system_gpu(s).name for s in catalog.systems if s.default_for_gpu]
    assert len(defaults) == len(set(defaults))
    assert catalog.systems_for(catalog.gpus.get("h200-nvl"))[0].name == "pcie-h200-nvl"  # the default first
    assert catalog.systems_for(catalog.gpus.get("v100")) == []


def test_system_bandwidths_in_base_units(catalog: Catalog) -> None:
    h100 = catalog.systems.get("dgx-h100")
    assert h100.group_link_bytes_per_s(8) == 450_000_000_000  # NVLink4 900 GB/s bidirectional → 450 each way
    assert h100.network_bytes_per_s_per_gpu == 50_000_000_000  # 8 NICs × 400 Gb/s ÷ 8 bit ÷ 8 GPUs
    assert h100.link_latency_s == pytest.approx(1.9e-6, rel=1e-12)  # µs ÷ 10⁶ (a float, rounded)
    mi300x = catalog.systems.get("mi300x-platform")
    assert mi300x.group_link_bytes_per_s(8) == 448_000_000_000  # 7 links × 64 GB/s each way
    assert mi300x.group_link_bytes_per_s(2) == 64_000_000_000  # a pair uses its one direct link: 448 × 1/7
    assert catalog.systems.get("gb200-nvl72").network_bytes_per_s_per_gpu == 50_000_000_000  # 72 × 400 Gb/s / 72


@pytest.mark.parametrize(
    ("change", "message"),
    [({"domain_gpus": 3}, "domain_gpus 3 must divide gpus_per_node 8"),
     ({"domain_gpus": 2, "intra_node_link": "pcie"}, "PCIe-only system has domain_gpus 1"),
     ({"price_date": None}, "price_usd and price_date"),
     ({"nic_gbit_per_s": -1}, "greater than 0")],
)
def test_a_bad_system_file_is_refused(catalog: Catalog, change: dict[str, object], message: str) -> None:
    from pydantic import ValidationError

    from estimator.catalog.systems import SystemSpec

    data = {**read_yaml(SPECS / "systems" / "hgx-h100.yaml"), **change}
    with pytest.raises(ValidationError, match=message):
        SystemSpec.model_validate(data)


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("m4-max", "Apple M4 Max (40-core GPU, 128GB)"),
        ("dgx-spark", "NVIDIA DGX Spark (GB10, 128GB)"),
        ("NVIDIA GB10", "NVIDIA DGX Spark (GB10, 128GB)"),
        ("tpu-v5e", "Google TPU v5e"),
        ("rtx-4060-ti-16gb", "NVIDIA GeForce RTX 4060 Ti 16GB"),
        ("h20", "NVIDIA H20 96GB"),
        ("b300", "NVIDIA B300 288GB"),
        ("rx-7900-xtx", "AMD Radeon RX 7900 XTX 24GB"),
        ("AMD Radeon RX 9070 XT", "AMD Radeon RX 9070 XT 16GB"),
    ],
)
def test_new_accelerators_resolve(catalog: Catalog, alias: str, name: str) -> None:
    assert catalog.gpus.get(alias).name == name


def test_unified_memory_shares(catalog: Catalog) -> None:
    # macOS's default wired limit is 75 % of memory on 64 GB and larger Macs (recommendedMaxWorkingSetSize)
    assert catalog.gpus.get("m2-ultra").memory_bytes == 154_618_822_656  # 147,456 MiB = 0.75 × 192 GiB
    assert catalog.gpus.get("m3-max").memory_bytes == 103_079_215_104  # 98,304 MiB = 0.75 × 128 GiB
    assert catalog.gpus.get("thor").memory_bytes == 137_438_953_472  # the installed 128 GiB, an upper bound


def test_blackwell_ultra_fp4_is_three_times_fp8(catalog: Catalog) -> None:
    b300 = catalog.gpus.get("b300").dense_tflop_per_s
    assert b300["fp4"] == 3 * b300["fp8"] == 13_500  # HGX B300: 108 PFLOPS dense FP4 / 8 GPUs
    assert "int8" not in b300  # cut on Blackwell Ultra
