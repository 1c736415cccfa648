"""What every report shares: the frozen pydantic base, the schema version, the flattening that CSV rows use, the
model and GPU every estimate names, the frame of an estimate's report, and the workload limits every mode checks.

Every report (inference, training, plan, sweep rows, validate, gpu) is a frozen model; its JSON is
``model_dump(mode="json")`` and its CSV row is `flatten` of that, so the two always hold the same fields.

One schema-version rule: every top-level report (one that is printed on its own) derives from `Versioned` and
carries ``schema_version`` = `SCHEMA_VERSION`, a "MAJOR.MINOR" string. MINOR grows when fields are added (old
readers keep working); MAJOR grows when a field is renamed, removed or changes meaning. Calibration files are
not reports: they are input files that `estimator calibrate` writes and `estimate` reads, and they version their
own file format with an integer (``CALIBRATION_FILE_VERSION`` in `estimator.live.calibration`), checked on read.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any, Generic, Literal, TypeVar, get_origin

from pydantic import BaseModel, ConfigDict, Field, create_model

SCHEMA_VERSION = "2.0"  # 2.0: warnings, assumptions and explain became typed notes (objects, were strings)

# The largest workload any mode accepts: far beyond any context window or batch, so a typo such as 1e12 is refused
# at the door; the capacity searches (max batch, max context) stop there too.
MAX_TOKENS = 100_000_000
MAX_BATCH = 1_000_000


class Frozen(BaseModel):
    """Base of every report model: immutable, and no field the schema does not name."""

    # The JSON Schema (`estimator schema`) describes output, where a field with a default is always present. No
    # report holds NaN or infinity: a non-finite figure is refused where it would be built, never printed.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, allow_inf_nan=False,
                              json_schema_serialization_defaults_required=True)


class Versioned(Frozen):
    """Base of every top-level report: its JSON opens with the schema version it follows."""

    schema_version: str = SCHEMA_VERSION


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings become dotted keys; lists of scalars join with '; '; lists of notes (objects that carry a
    ``text``, see estimator.notes) join their texts with '; '; other lists of objects become JSON."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, list | tuple):
            if all(not isinstance(v, Mapping | list | tuple) for v in value):
                out[name] = "; ".join(str(v) for v in value)
            elif all(isinstance(v, Mapping) and "text" in v for v in value):
                out[name] = "; ".join(str(v["text"]) for v in value)
            else:
                out[name] = json.dumps(value, separators=(",", ":"))
        else:
            out[name] = value
    return out


def flat_model(model: type[BaseModel], name: str, *, leave_out: Collection[str] = ()) -> type[Frozen]:
    """The model of ``flatten(model.model_dump(mode="json"))``: one field per dotted key, in the same order.

    Nested models become dotted fields (``memory.weights_bytes``, held under the alias); a list or tuple field
    becomes a string, as `flatten` writes it. So a CSV row (or a sweep row) has a schema of its own that cannot
    drift from the report it flattens.
    """
    fields: dict[str, Any] = {}

    def walk(kind: type[BaseModel], prefix: str) -> None:
        for key, info in kind.model_fields.items():
            dotted = f"{prefix}{key}"
            if dotted in leave_out:
                continue
            annotation = info.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                walk(annotation, f"{dotted}.")
            else:
                if get_origin(annotation) in (list, tuple):
                    annotation = str
                fields[dotted.replace(".", "__")] = (annotation, Field(alias=dotted, description=info.description))

    walk(model, "")
    flat: type[Frozen] = create_model(name, __base__=Frozen, __doc__=f"{model.__name__}, flattened as CSV rows are",
                                      **fields)
    return flat


class ModelInfo(Frozen):
    name: str
    params: int
    active_params: int
    architecture: str | None  # model_type, or None for a generic size-only model
    layers: int | None
    hidden_size: int | None
    kv_cache_kind: str | None


class GpuInfo(Frozen):
    name: str
    requested_as: str
    memory_type: str
    memory_bytes: int  # usable, as the driver reports it (or --gpu-memory)
    memory_gb: float | None = None  # the memory the card is sold with, in the vendor's decimal GB (80 for an H100)
    bandwidth_bytes_per_s: float
    peak_flop_per_s: float
    compute_dtype: str
    system: str | None = None  # the server the GPUs sit in (specs/systems), when one is known
    nodes: int | None = None
    tdp_w: float | None = None  # one board's power, the datasheet's TDP (None: not published)
    power_w: float | None = None  # every GPU of the job at its TDP: tdp_w × GPUs


Cost = Literal["none", "time", "quality", "hardware"]  # ranked in this order among changes that fit


class Fix(Frozen):
    """One change of the job's options and what it gives, from the estimate re-run with the change applied:
    ``per_gpu_bytes`` the memory per GPU after it, ``frees_bytes`` what it saves, ``fits`` whether the job then
    fits; ``cost`` what it costs (none < time < quality < hardware) and ``time_factor`` the job's expected time
    with it ÷ without it."""

    change: str
    frees_bytes: int | None  # None: no single figure to compare with (a plan where no server holds the model)
    per_gpu_bytes: int | None
    fits: bool
    cost: Cost
    cost_detail: str
    time_factor: float | None


WorkloadT = TypeVar("WorkloadT", bound=Frozen)
MemoryT = TypeVar("MemoryT", bound=Frozen)
TimeT = TypeVar("TimeT", bound=Frozen)
NoteT = TypeVar("NoteT", bound=Frozen)


class EstimateReport(Versioned, Generic[WorkloadT, MemoryT, TimeT, NoteT]):
    """The frame of an estimate's report, inference or training: the model and GPU, the mode's own workload, memory
    and time, then the notes. One frame, so both modes print their fields in the same order; the note type is a
    parameter because notes (estimator.notes) sit above this layer."""

    model: ModelInfo
    gpu: GpuInfo
    workload: WorkloadT
    memory: MemoryT
    time: TimeT
    assumptions: tuple[NoteT, ...]
    warnings: tuple[NoteT, ...]
    explain: tuple[NoteT, ...]
    # When the job does not fit: the smallest changes that make it fit, ranked as `estimator oom` ranks them
    # (those that fit first, then by cost, time, memory freed); empty when it fits.
    fixes: tuple[Fix, ...] = ()
