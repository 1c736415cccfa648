"""estimator: GPU memory and speed of transformer models, from datasheets and configs.

>>> from estimator import default_catalog, estimate, InferenceWorkload
"""

from estimator.architecture import Architecture, ModelSpec
from estimator.catalog import Catalog, default_catalog
from estimator.errors import (
    DeviceUnavailable,
    EstimatorError,
    MissingDependency,
    SpecInvalid,
    SpecNotFound,
    WorkloadInvalid,
)
from estimator.estimate import estimate
from estimator.profiles import EfficiencyProfile
from estimator.report import Report
from estimator.specs import GpuSpec, NumberFormat
from estimator.workload import InferenceWorkload

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
