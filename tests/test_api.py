"""The public API of ``estimator``: what ``__all__`` names, that every name resolves, and that importing it is light."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import estimator

# The public API: estimate, training, plan, sweep, the probe protocol, the errors; and the request the CLI and
# the HTTP API build.
REQUIRED = {
    "estimate_request", "estimate_for", "EstimateRequest", "Hardware", "Job", "Output", "Training", "FieldInvalid",
    "estimate", "InferenceWorkload", "Report", "default_catalog", "Catalog",
    "estimate_training", "TrainingWorkload", "TrainingReport",
    "plan", "Goal", "Prices", "PlanReport",
    "sweep", "SweepResult",
    "GpuProbe", "FakeProbe", "NvmlProbe", "Snapshot",
    "EstimatorError", "SpecNotFound", "SpecInvalid", "WorkloadInvalid", "MissingDependency", "DeviceUnavailable",
}


def test_all_names_the_public_api() -> None:
    assert REQUIRED - set(estimator.__all__) == set()
    assert len(estimator.__all__) == len(set(estimator.__all__))


@pytest.mark.parametrize("name", estimator.__all__)
def test_every_name_in_all_resolves_to_its_defining_module(name: str) -> None:
    value = getattr(estimator, name)
    module = importlib.import_module(estimator._EXPORTS[name])
    assert value is getattr(module, name)


def test_lazy_table_and_all_agree() -> None:
    assert set(estimator._EXPORTS) == set(estimator.__all__)
    assert set(estimator.__all__) <= set(dir(estimator))


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = estimator.nope


def test_errors_share_one_base() -> None:
    for name in ("SpecNotFound", "SpecInvalid", "WorkloadInvalid", "MissingDependency", "DeviceUnavailable"):
        assert issubclass(getattr(estimator, name), estimator.EstimatorError)


def test_fake_probe_is_a_gpu_probe() -> None:
    """mypy checks the assignment against the protocol; the fake raises what it was given, then closes."""
    probe: estimator.GpuProbe = estimator.FakeProbe(error=estimator.DeviceUnavailable("no NVIDIA driver"))
    with pytest.raises(estimator.DeviceUnavailable, match="no NVIDIA driver"):
        probe.read()
    probe.close()


def test_import_estimator_loads_nothing_heavy() -> None:
    """``import estimator`` alone imports no sub-module of it and neither pydantic nor yaml: names load on use."""
    code = ("import sys, estimator; print(sorted(m for m in sys.modules if m.startswith('estimator.') "
            "or m.split('.')[0] in ('pydantic', 'yaml', 'numpy', 'rich', 'typer')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
