"""Regression tests of the fuzz campaign's 'NaN / infinity in reports' class: non-finite numbers are refused
where they are read (spec files, profiles, calibration and price files, workloads), and no report can hold one."""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from estimator.catalog.files import default_specs_dir
from estimator.catalog.registry import Catalog
from estimator.errors import SpecInvalid
from estimator.inference.report import TimeReport
from tests.conftest import CliResult


def _specs_with(tmp_path: Path, sub: str, name: str, key: str, value: str) -> Path:
    """A copy of the shipped specs where one file's ``key:`` line holds ``value``."""
    root = tmp_path / "specs"
    shutil.copytree(default_specs_dir(), root)
    path = root / sub / f"{name}.yaml"
    text, count = re.subn(rf"^{key}:.*$", f"{key}: {value}", path.read_text(), count=1, flags=re.M)
    assert count == 1
    path.write_text(text)
    return root


@pytest.mark.parametrize("value", [".inf", ".nan", "-.inf"])
def test_a_gpu_spec_with_a_non_finite_rate_is_refused(tmp_path: Path, value: str) -> None:
    root = _specs_with(tmp_path, "gpus", "nvidia-h100-sxm5", "bandwidth_gb_per_s", value)
    with pytest.raises(SpecInvalid, match="finite"):
        Catalog.load(root).gpus.get("h100")


def test_a_profile_with_a_non_finite_efficiency_is_refused(tmp_path: Path) -> None:
    root = _specs_with(tmp_path, "profiles", "optimized", "bandwidth_efficiency", ".nan")
    with pytest.raises(SpecInvalid, match="finite"):
        Catalog.load(root).profiles.get("optimized")


def test_no_report_can_hold_a_non_finite_figure() -> None:
    fields = {name: 1.0 for name, f in TimeReport.model_fields.items() if f.annotation in (float, float | None)}
    with pytest.raises(ValidationError, match="finite"):
        TimeReport.model_validate({**fields, "prefill_s": math.inf})


def test_a_config_whose_sizes_overflow_the_times_is_one_line(tmp_path: Path,
                                                             cli: Callable[..., CliResult]) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 1e300, '
                      '"num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000}')
    result = cli("estimate", "--model", str(config), "--gpu", "h100", "--format", "json")
    assert result.exit_code != 0
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("error: ")


def test_a_config_ten_million_layers_deep_is_refused_at_once(tmp_path: Path,
                                                             cli: Callable[..., CliResult]) -> None:
    """Fuzz class 'unbounded work': 10,000,000 layers took 22 s; the depth ceiling (4,096) refuses it at read."""
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, '
                      '"num_hidden_layers": 10000000, "num_attention_heads": 32, "vocab_size": 32000}')
    result = cli("estimate", "--model", str(config), "--gpu", "h100")
    assert result.exit_code == 2
    assert "less than or equal to 4096" in result.stderr
