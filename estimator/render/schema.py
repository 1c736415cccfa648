"""The JSON Schema of every report, generated from its model (pydantic ``model_json_schema``).

`estimator schema NAME` prints it; docs/schema/NAME.json ships it (tests/render/test_schema.py keeps the files
equal to what this module generates, and checks each command's real output against them). The schemas describe
output: every field is present, and properties computed from others are marked ``readOnly``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from estimator.inference.report import Report
from estimator.live.probe import GpuReport
from estimator.live.validation import ValidateReport
from estimator.oom.report import OomReport
from estimator.planning.plan import PlanReport
from estimator.planning.sweep_row import SweepErrorRow, SweepRow
from estimator.training.report import TrainingReport

DIALECT = "https://json-schema.org/draft/2020-12/schema"  # the draft pydantic generates

# The command each schema describes (`--format json`), and the model of its output.
REPORTS: dict[str, tuple[str, type[BaseModel]]] = {
    "estimate": ("estimate --format json", Report),
    "train": ("estimate --mode train --format json", TrainingReport),
    "plan": ("estimator plan --format json", PlanReport),
    "sweep": ("estimator sweep --format json (a list of rows)", SweepRow),
    "validate": ("estimator validate --format json", ValidateReport),
    "gpu": ("estimator gpu --format json", GpuReport),
    "oom": ("estimator oom --format json", OomReport),
}


def _spec_models() -> dict[str, tuple[str, type[BaseModel]]]:
    """The input files and options each spec schema describes, and the model that reads them."""
    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.families import Family
    from estimator.catalog.profiles import EfficiencyProfile
    from estimator.catalog.specs import GpuSpec, NumberFormat
    from estimator.catalog.systems import SystemSpec
    from estimator.inference.workload import InferenceWorkload
    from estimator.live.calibration import CalibrationFile
    from estimator.planning.costs import Prices
    from estimator.training.workload import TrainingWorkload

    return {
        "gpu": ("a GPU spec, specs/gpus/*.yaml", GpuSpec),
        "system": ("a server spec, specs/systems/*.yaml", SystemSpec),
        "quant": ("a number format, specs/quant/*.yaml", NumberFormat),
        "profile": ("an efficiency profile, specs/profiles/*.yaml", EfficiencyProfile),
        "family": ("a model family's reading of config.json, specs/families/*.yaml", Family),
        "model": ("a model as read from its config.json (specs/models/*.yaml `config:`, or --model FILE)",
                  ModelSpec),
        "prices": ("a prices file, --prices FILE and specs/costs.yaml", Prices),
        "calibration": ("a calibration file, from `estimator calibrate`", CalibrationFile),
        "inference-workload": ("estimate's inference options, as validated", InferenceWorkload),
        "training-workload": ("estimate --mode train's options, as validated", TrainingWorkload),
    }


SPEC_NAMES = ("gpu", "system", "quant", "profile", "family", "model", "prices", "calibration", "inference-workload",
              "training-workload")


def spec_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of an input (a key of `SPEC_NAMES`): what the tool accepts, every number with its ceiling
    (shipped in docs/schema/specs/)."""
    what, model = _spec_models()[name]
    schema = model.model_json_schema(mode="validation")
    return {"$schema": DIALECT, "title": model.__name__, "description": f"The schema of {what}.",
            **{k: v for k, v in schema.items() if k not in ("title", "description")}}


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of the report ``name`` (a key of `REPORTS`)."""
    command, model = REPORTS[name]
    schema = model.model_json_schema(mode="serialization")
    if name == "sweep":  # a list of rows, each a row with an estimate or an error row (the point and its reason)
        from pydantic import TypeAdapter

        schema = TypeAdapter(list[SweepRow | SweepErrorRow]).json_schema(mode="serialization")
    about = model.__doc__ or ""
    return {"$schema": DIALECT, "title": model.__name__,
            "description": f"The output of `{command}`." + (f" {' '.join(about.split())}" if about else ""),
            **{k: v for k, v in schema.items() if k not in ("title", "description")}}
