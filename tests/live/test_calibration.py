"""Calibration files: derived profile values, reading and writing, and how estimate picks them up."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.registry import Catalog
from estimator.errors import SpecInvalid, WorkloadInvalid
from estimator.live.calibration import (
    GpuCalibration,
    apply_calibration,
    calibrated_profile,
    derive_overrides,
    entry_for,
    load_calibration,
    save_calibration,
    user_calibration_path,
)
from tests.conftest import CliResult

MEASURED = Path(__file__).resolve().parent.parent / "data" / "measured" / "h200-2026-11-30-calibration.yaml"

RAW: dict[str, Any] = {
    "graph_layer_s": 3.8e-5, "cuda_context_bytes": 650_969_088, "workspace_bytes": 102_760_448,
    "driver_reserved_bytes": 644_939_776, "graph_bandwidth_bytes_per_s": 4.0e12,
    "matmul_flop_per_s": {"bf16": 7.5e14},
}


def entry(catalog_gpu: str | None = "NVIDIA H200 SXM 141GB", name: str = "NVIDIA H200",
          overrides: dict[str, float] | None = None) -> GpuCalibration:
    return GpuCalibration(
        gpu=name, catalog_gpu=catalog_gpu, measured_at="2026-11-30", memory_total_bytes=150_754_820_096,
        copy_bytes_per_s=4.2e12, read_bytes_per_s=4.2e12, gemv_bytes_per_s=3.4e12, matmul_flop_per_s={"bf16": 7.5e14},
        driver_reserved_bytes=644_939_776, cuda_context_bytes=650_969_088, workspace_bytes=102_760_448,
        graph_kernel_s=1.1e-6, graph_layer_s=3.8e-5, graph_bandwidth_bytes_per_s=4.0e12,
        profile_overrides=overrides if overrides is not None else {"bandwidth_efficiency": 0.5,
                                                                   "per_layer_step_s": 1e-4})


def test_derive_overrides(catalog: Catalog) -> None:
    h200 = catalog.gpus.get("h200")
    out = derive_overrides(RAW, h200, 150_754_820_096)
    assert out["bandwidth_efficiency"] == pytest.approx(4.0e12 / 4.8e12)
    assert out["matmul_flop_efficiency"] == pytest.approx(7.5e14 / 989.4e12)
    assert out["driver_reserved_fraction"] == pytest.approx(644_939_776 / 150_754_820_096)
    assert out["per_layer_step_s"] == 3.8e-5
    assert out["cuda_context_bytes"] == 650_969_088
    unmatched = derive_overrides(RAW, None, 150_754_820_096)
    assert "bandwidth_efficiency" not in unmatched  # no datasheet peak to divide by


def test_save_merges_cards_and_loads_back(tmp_path: Path) -> None:
    path = tmp_path / "cal.yaml"
    save_calibration(path, entry())
    save_calibration(path, entry(catalog_gpu="NVIDIA GeForce RTX 4090 24GB", name="NVIDIA GeForce RTX 4090"))
    save_calibration(path, entry(overrides={"bandwidth_efficiency": 0.6}))  # replaces the H200 entry
    loaded = load_calibration(path)
    assert set(loaded.gpus) == {"NVIDIA H200", "NVIDIA GeForce RTX 4090"}
    assert loaded.gpus["NVIDIA H200"].profile_overrides == {"bandwidth_efficiency": 0.6}


def test_committed_h200_calibration_loads(catalog: Catalog) -> None:
    found = entry_for(load_calibration(MEASURED), catalog.gpus.get("h200"))
    assert found is not None
    assert found.gpu == "NVIDIA H200"
    assert 0.7 < found.profile_overrides["bandwidth_efficiency"] < 0.95


def test_apply_changes_only_hardware_fields(catalog: Catalog) -> None:
    hf = catalog.profiles.get("hf")
    calibrated = apply_calibration(hf, entry(overrides={"bandwidth_efficiency": 0.5, "workspace_bytes": 1.0e6}),
                                   "cal.yaml")
    assert calibrated.bandwidth_efficiency == 0.5
    assert calibrated.workspace_bytes == 1_000_000
    assert calibrated.host_per_layer_s == hf.host_per_layer_s
    assert "calibrated on NVIDIA H200 (cal.yaml, 2026-11-30)" in calibrated.description
    with pytest.raises(SpecInvalid, match="calibrated profile is invalid"):
        apply_calibration(hf, entry(overrides={"bandwidth_efficiency": 2.0}), "cal.yaml")


def test_explicit_file_must_cover_the_card(catalog: Catalog, tmp_path: Path) -> None:
    path = tmp_path / "cal.yaml"
    save_calibration(path, entry())
    profile = catalog.profiles.get("optimized")
    assert calibrated_profile(profile, catalog.gpus.get("h200"), path).bandwidth_efficiency == 0.5
    with pytest.raises(WorkloadInvalid, match="has no calibration for NVIDIA A100"):
        calibrated_profile(profile, catalog.gpus.get("a100"), path)


def test_user_file_is_picked_up_only_for_its_card(catalog: Catalog, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ESTIMATOR_NO_CALIBRATION", raising=False)
    assert user_calibration_path() == tmp_path / "estimator" / "calibration.yaml"
    profile = catalog.profiles.get("optimized")
    assert calibrated_profile(profile, catalog.gpus.get("h200"), None) is profile  # no file yet
    save_calibration(user_calibration_path(), entry())
    assert calibrated_profile(profile, catalog.gpus.get("h200"), None).bandwidth_efficiency == 0.5
    assert calibrated_profile(profile, catalog.gpus.get("a100"), None) is profile
    monkeypatch.setenv("ESTIMATOR_NO_CALIBRATION", "1")
    assert calibrated_profile(profile, catalog.gpus.get("h200"), None) is profile


@pytest.mark.parametrize(("text", "message"), [
    ("gpus: [", "malformed YAML"),
    ("- a\n- b\n", "a calibration file is a mapping"),
    ("schema_version: 2\ngpus: {}\n", "schema_version 2"),
    ("gpus: {x: {gpu: x}}\n", "gpus.x"),
])
def test_bad_files_are_spec_invalid(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "cal.yaml"
    path.write_text(text)
    with pytest.raises(SpecInvalid, match=message):
        load_calibration(path)


def test_unknown_override_key(tmp_path: Path) -> None:
    path = tmp_path / "cal.yaml"
    save_calibration(path, entry(overrides={"host_per_layer_s": 1.0}))
    with pytest.raises(SpecInvalid, match="unknown keys host_per_layer_s"):
        load_calibration(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecInvalid, match="cannot read calibration file"):
        load_calibration(tmp_path / "none.yaml")


def test_estimate_with_calibration(cli: Callable[..., CliResult], tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty"))
    path = tmp_path / "cal.yaml"
    save_calibration(path, entry())
    args = ("estimate", "--model", "llama-3.1-8b", "--gpu", "h200", "--format", "json")
    plain = json.loads(cli(*args).stdout)
    calibrated = json.loads(cli(*args, "--calibration", str(path)).stdout)
    # half the bandwidth efficiency (0.5 vs 0.86) and 100 µs per layer: a slower decode step
    assert calibrated["time"]["decode_step_s"] > plain["time"]["decode_step_s"] * 1.5
    assert any("calibrated on NVIDIA H200" in a["text"] for a in calibrated["assumptions"])
    other = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "a100", "--calibration", str(path))
    assert other.exit_code == 2
    assert other.stderr.startswith("error: ") and "has no calibration for" in other.stderr


def test_a_corrupt_user_calibration_file_is_reported_once_and_ignored(catalog: Catalog, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Fuzz-campaign class 'a corrupt calibration file breaks every estimate': the file picked up automatically
    is skipped with one warning; named with --calibration, the same file is still refused."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ESTIMATOR_NO_CALIBRATION", raising=False)
    user_calibration_path().parent.mkdir(parents=True)
    user_calibration_path().write_text("gpus: [")  # a write cut short
    profile = catalog.profiles.get("optimized")
    assert calibrated_profile(profile, catalog.gpus.get("h200"), None) is profile
    warning = capsys.readouterr().err
    assert warning.count("\n") == 1
    assert warning.startswith("warning: ignoring the calibration file:")
    with pytest.raises(SpecInvalid, match="malformed YAML"):
        calibrated_profile(profile, catalog.gpus.get("h200"), user_calibration_path())


def test_derive_overrides_takes_the_measured_host_cost(catalog: Catalog) -> None:
    out = derive_overrides({**RAW, "host_per_op_s": 1.2e-5}, catalog.gpus.get("h200"), 150_754_820_096)
    assert out["host_per_op_s"] == 1.2e-5
    assert "host_per_op_s" not in derive_overrides(RAW, None, 150_754_820_096)  # not measured: the profile's own


def test_a_measured_host_cost_scales_every_host_figure(shipped_catalog: Catalog) -> None:
    hf = shipped_catalog.profiles.get("hf")
    half = hf.host_per_op_s / 2
    calibrated = apply_calibration(hf, entry(overrides={"host_per_op_s": half}), "cal.yaml")
    assert calibrated.host_per_op_s == half
    # every other host figure is the same dispatch measured on the profile's host: halved with it
    assert calibrated.train_host_forward_per_layer_s == pytest.approx(hf.train_host_forward_per_layer_s / 2)
    assert calibrated.optimizer_host_per_tensor_s == pytest.approx(hf.optimizer_host_per_tensor_s / 2)
    assert calibrated.host_per_layer_s == pytest.approx(hf.host_per_layer_s / 2)
    assert calibrated.bandwidth_efficiency == hf.bandwidth_efficiency  # not in this entry: the profile's


def test_a_profile_without_a_host_floor_keeps_none(shipped_catalog: Catalog) -> None:
    for name in ("hf-graph", "optimized"):
        profile = shipped_catalog.profiles.get(name)
        calibrated = apply_calibration(profile, entry(overrides={"host_per_op_s": 1e-5}), "cal.yaml")
        assert calibrated.host_per_op_s == profile.host_per_op_s == 0
        assert calibrated.host_per_layer_s == profile.host_per_layer_s


def test_a_measured_layer_floor_leaves_the_cost_per_operation(shipped_catalog: Catalog) -> None:
    # calibrate reads the lean decode's fixed cost per layer: hf-graph takes it for the families whose operations it
    # does not count, and keeps its cost per operation (transformers' kernels, which calibrate does not time)
    graph = shipped_catalog.profiles.get("hf-graph")
    assert (graph.gpu_per_op_s, graph.per_layer_step_s) == (1.97e-6, 4.1e-5)
    calibrated = apply_calibration(graph, entry(overrides={"per_layer_step_s": 3.69e-5}), "cal.yaml")
    assert (calibrated.gpu_per_op_s, calibrated.per_layer_step_s) == (1.97e-6, 3.69e-5)


def test_calibration_files_without_host_fields_still_load() -> None:
    found = load_calibration(MEASURED).gpus["NVIDIA H200"]
    assert found.host_per_op_s is None and found.host_bare_op_s is None


def test_a_measured_gemm_rate_scales_the_profile_matmul_fraction(shipped_catalog: Catalog, catalog: Catalog) -> None:
    # calibrate's probe is one large bf16 GEMM; the profiles' 0.65 is what the GEMMs of their software reach on an
    # H200 whose probe reads 0.755 (matmul_reference_efficiency). A card whose probe reads 0.8 runs them at
    # 0.65 × 0.8 / 0.755, not at the probe's 0.8 (which put seed 4's calibrated prefill median at 18.3 %)
    for name in ("hf", "hf-graph", "optimized", "megatron"):
        profile = shipped_catalog.profiles.get(name)
        assert (profile.matmul_flop_efficiency, profile.matmul_reference_efficiency) == (0.65, 0.755)
        calibrated = apply_calibration(profile, entry(overrides={"matmul_flop_efficiency": 0.8}), "cal.yaml")
        assert calibrated.matmul_flop_efficiency == pytest.approx(0.65 * 0.8 / 0.755, rel=1e-12)
        same_card = apply_calibration(profile, entry(overrides={"matmul_flop_efficiency": 0.755}), "cal.yaml")
        assert same_card.matmul_flop_efficiency == pytest.approx(0.65, rel=1e-12)
    # a profile that states no reference takes the probe's reading as it is
    test_hf = catalog.profiles.get("hf")
    assert test_hf.matmul_reference_efficiency is None
    assert apply_calibration(test_hf, entry(overrides={"matmul_flop_efficiency": 0.8}),
                             "cal.yaml").matmul_flop_efficiency == 0.8
