"""estimator: GPU memory and speed of transformer models, from datasheets and configs.

>>> from estimator import default_catalog, estimate, InferenceWorkload
"""

from estimator.catalog.architecture import Architecture, ModelSpec
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.registry import Catalog, default_catalog
from estimator.catalog.specs import GpuSpec, NumberFormat
from estimator.errors import (
    DeviceUnavailable,
    EstimatorError,
    MissingDependency,
    SpecInvalid,
    SpecNotFound,
    WorkloadInvalid,
)
from estimator.inference.estimate import estimate
from estimator.inference.report import Report
from estimator.inference.workload import InferenceWorkload

__all__ = [
    "Architecture",
    "Catalog",
    "DeviceUnavailable",
    "EfficiencyProfile",
    "EstimatorError",
    "GpuSpec",
    "InferenceWorkload",
    "MissingDependency",
    "ModelSpec",
    "NumberFormat",
    "Report",
    "SpecInvalid",
    "SpecNotFound",
    "WorkloadInvalid",
    "default_catalog",
    "estimate",
]
__version__ = "0.1.0"
