"""estimator: GPU memory and speed of transformer models, from datasheets and configs.

>>> from estimator import estimate_for, EstimateRequest, estimate_request

The public API: one request as the CLI makes it (`estimate_for(model=..., gpu=..., gpus=8)`, or a typed
`EstimateRequest` run by `estimate_request`: the hardware chosen, formats resolved and strings converted as the
CLI does), inference (`estimate`), training (`estimate_training`), capacity planning (`plan`), grid sweeps
(`sweep`), the live-GPU probe protocol (`GpuProbe`, `FakeProbe`, `NvmlProbe`) and the errors. Names load on first
use (module ``__getattr__``, PEP 562), so ``import estimator`` costs almost nothing and each command imports only
what it needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from estimator.catalog.architecture import Architecture, ModelSpec
    from estimator.catalog.profiles import EfficiencyProfile
    from estimator.catalog.registry import Catalog, default_catalog
    from estimator.catalog.specs import GpuSpec, NumberFormat
    from estimator.errors import (
        DeviceUnavailable,
        EstimatorError,
        FieldInvalid,
        MissingDependency,
        SpecInvalid,
        SpecNotFound,
        WorkloadInvalid,
    )
    from estimator.inference.estimate import estimate
    from estimator.inference.report import Report
    from estimator.inference.workload import InferenceWorkload
    from estimator.live.probe import FakeProbe, GpuProbe, LiveGpu, NvmlProbe, Snapshot
    from estimator.planning.plan import Goal, PlanReport, Prices, plan
    from estimator.planning.sweep import SweepResult, sweep
    from estimator.request.estimate import estimate_for, estimate_request
    from estimator.request.models import EstimateRequest, Hardware, Job, Output, Training
    from estimator.training.estimate import estimate_training
    from estimator.training.report import TrainingReport
    from estimator.training.workload import TrainingWorkload

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "Architecture": "estimator.catalog.architecture",
    "ModelSpec": "estimator.catalog.architecture",
    "EfficiencyProfile": "estimator.catalog.profiles",
    "Catalog": "estimator.catalog.registry",
    "default_catalog": "estimator.catalog.registry",
    "GpuSpec": "estimator.catalog.specs",
    "NumberFormat": "estimator.catalog.specs",
    "DeviceUnavailable": "estimator.errors",
    "EstimatorError": "estimator.errors",
    "FieldInvalid": "estimator.errors",
    "MissingDependency": "estimator.errors",
    "SpecInvalid": "estimator.errors",
    "SpecNotFound": "estimator.errors",
    "WorkloadInvalid": "estimator.errors",
    "estimate": "estimator.inference.estimate",
    "Report": "estimator.inference.report",
    "InferenceWorkload": "estimator.inference.workload",
    "FakeProbe": "estimator.live.probe",
    "GpuProbe": "estimator.live.probe",
    "LiveGpu": "estimator.live.probe",
    "NvmlProbe": "estimator.live.probe",
    "Snapshot": "estimator.live.probe",
    "Goal": "estimator.planning.plan",
    "PlanReport": "estimator.planning.plan",
    "Prices": "estimator.planning.plan",
    "plan": "estimator.planning.plan",
    "SweepResult": "estimator.planning.sweep",
    "sweep": "estimator.planning.sweep",
    "estimate_for": "estimator.request.estimate",
    "estimate_request": "estimator.request.estimate",
    "EstimateRequest": "estimator.request.models",
    "Hardware": "estimator.request.models",
    "Job": "estimator.request.models",
    "Output": "estimator.request.models",
    "Training": "estimator.request.models",
    "estimate_training": "estimator.training.estimate",
    "TrainingReport": "estimator.training.report",
    "TrainingWorkload": "estimator.training.workload",
}

__all__ = [
    "Architecture",
    "Catalog",
    "DeviceUnavailable",
    "EfficiencyProfile",
    "EstimateRequest",
    "EstimatorError",
    "FakeProbe",
    "FieldInvalid",
    "Goal",
    "GpuProbe",
    "GpuSpec",
    "Hardware",
    "InferenceWorkload",
    "Job",
    "LiveGpu",
    "MissingDependency",
    "ModelSpec",
    "NumberFormat",
    "NvmlProbe",
    "Output",
    "PlanReport",
    "Prices",
    "Report",
    "Snapshot",
    "SpecInvalid",
    "SpecNotFound",
    "SweepResult",
    "Training",
    "TrainingReport",
    "TrainingWorkload",
    "WorkloadInvalid",
    "default_catalog",
    "estimate",
    "estimate_for",
    "estimate_request",
    "estimate_training",
    "plan",
    "sweep",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """Import the module that defines a public name on first use, and keep the name here."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'estimator' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
