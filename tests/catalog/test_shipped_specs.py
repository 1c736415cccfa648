"""The shipped spec files are data: each validates, is sourced, and holds the facts users rely on."""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator.catalog.registry import Catalog, default_specs_dir, read_yaml
from estimator.model.inventory import param_count

SPECS = default_specs_dir()
GPU_FILES = sorted((SPECS / "gpus").glob("*.yaml"))
MODEL_FILES = sorted((SPECS / "models").glob("*.yaml"))


def test_catalog_sizes(catalog: Catalog) -> None:
    assert len(catalog.gpus) >= 24
    assert len(catalog.models) >= 30
    assert {g.memory_type for g in catalog.gpus} >= {"GDDR6", "GDDR6X", "GDDR7", "HBM2", "HBM2e", "HBM3", "HBM3e"}
    assert {g.vendor for g in catalog.gpus} >= {"nvidia", "amd"}


@pytest.mark.parametrize("path", GPU_FILES, ids=lambda p: p.stem)
def test_gpu_file(path: Path, catalog: Catalog) -> None:
    gpu = catalog.gpus.get(read_yaml(path)["name"])
    assert path.stem.startswith(gpu.vendor + "-")
    assert gpu.sources
    mismatch = abs(gpu.derived_bandwidth_gb_per_s - gpu.bandwidth_gb_per_s) / gpu.bandwidth_gb_per_s
    assert mismatch <= 0.03 or gpu.bandwidth_mismatch_reason


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
