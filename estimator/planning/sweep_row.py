"""The model of one sweep row: estimate's Report flattened with dots, as `estimate --format csv` writes it, without
``explain``, and an ``error`` field. `estimator.planning.sweep` builds rows as plain dicts (a million model instances
would cost more than the sweep itself); these models name and type their keys for the JSON Schema (`estimator
schema sweep`), and the tests check that the rows' keys are their fields, in order.

A point the model cannot run (a tensor-parallel degree that does not split its heads, a point past the exact-memory
limit) is a row of its own: `SweepErrorRow`, whose fields that name the point (model, card, workload) are filled,
every other field null, and ``error`` the reason, estimate's own message for that point. The rest of the grid goes
on; a valid row's ``error`` is null.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, create_model

from estimator.inference.report import Report
from estimator.report import Frozen, flat_model

# per-row arithmetic would dwarf the row (`estimate --explain` prints it for one point); a point's fixes are other
# points of the grid (`estimate` lists them for one point)
LEFT_OUT = ("explain", "fixes")

# The fields an error row fills: what names the point, known without estimating it.
IDENTITY = ("schema_version", "model.name", "gpu.name", "gpu.requested_as", "workload.mode", "workload.batch",
            "workload.prompt_tokens", "workload.output_tokens", "workload.dtype", "workload.kv_dtype",
            "workload.gpus", "workload.logits", "workload.profile", "workload.mla_cache")

_ERROR = "Why this point has no estimate (estimate's message for it); null in a row that has one."

_Flat = flat_model(Report, "SweepRowFields", leave_out=LEFT_OUT)

SweepRow: type[Frozen] = create_model("SweepRow", __base__=_Flat,
                                      __doc__="A row per point: Report flattened as CSV rows are, and error (null); "
                                              "a point without an estimate is a SweepErrorRow.",
                                      error=(None, Field(alias="error", description=_ERROR)))


def _error_fields() -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, info in SweepRow.model_fields.items():
        alias = info.alias or name
        if alias in IDENTITY:
            fields[name] = (info.annotation, Field(alias=alias, description=info.description))
        elif name != "error":
            fields[name] = (None, Field(alias=alias, description=info.description))
    return fields


SweepErrorRow: type[Frozen] = create_model(
    "SweepErrorRow", __base__=Frozen, __doc__="A sweep point without an estimate: the point, and why.",
    **_error_fields(), error=(str, Field(alias="error", description=_ERROR)))

KEYS: tuple[str, ...] = tuple(info.alias or name for name, info in SweepRow.model_fields.items())
"""Every sweep row's keys, in order (valid and error rows alike)."""
