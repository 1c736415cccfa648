"""Each endpoint's work, without HTTP: fields → the typed request → the report the command prints.

The conversions are the request layer's, which the commands call too (`estimate_request_of`, `plan_report`,
`sweep_grid`); a model is read by name
only (`Catalog.named_model`: a request never names a file), or from a config.json sent as the request body,
through the same reader as ``--model path/config.json``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from estimator.catalog.files import MAX_CONFIG_BYTES
from estimator.catalog.registry import model_from_config
from estimator.errors import SpecInvalid, SpecNotFound
from estimator.request.convert import estimate_request_of
from estimator.request.estimate import estimate_request
from estimator.request.listing import catalog_rows as listed
from estimator.request.listing import model_row, table_rows
from estimator.request.plan import plan_report
from estimator.request.sweep import grid_points, sweep_grid, sweep_result, too_many_points
from estimator.serve.documents import Table
from estimator.serve.fields import RequestInvalid, parse

if TYPE_CHECKING:
    from pydantic import BaseModel

    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.registry import Catalog

Query = Iterable[tuple[str, str]]
UPLOADED = "uploaded-config"  # the model name a config.json body stands for, when it names none
MAX_BODY_BYTES = MAX_CONFIG_BYTES  # a config.json body: as much as a config.json file may hold
MAX_SWEEP_POINTS = 20_000  # a grid past this is for `estimator sweep -o grid.csv`, not a request


def uploaded_model(body: bytes) -> ModelSpec:
    """A config.json sent as a request body, read as ``--model path/config.json`` reads a file."""
    if len(body) > MAX_BODY_BYTES:
        raise RequestInvalid([("body", f"a config.json body holds at most {MAX_BODY_BYTES:,} bytes")])
    from estimator.catalog.files import parse_json

    try:
        config = parse_json(body, "config.json")  # the guarded reader every file goes through: one line
        return model_from_config(config, source="config.json", default_name=UPLOADED)
    except SpecInvalid as error:
        raise RequestInvalid([("body", str(error))]) from None


def _model(catalog: Catalog, p: dict[str, Any], uploaded: ModelSpec | None) -> ModelSpec:
    return uploaded if uploaded is not None else named_model(catalog, p["model"])


def named_model(catalog: Catalog, text: str) -> ModelSpec:
    """A model by catalog name or size; a path is refused, never read (the server reads no file a request names)."""
    try:
        return catalog.named_model(text)
    except SpecNotFound:
        if text.endswith(".json") or any(c in text for c in "\\~") or text.startswith((".", "/")):
            raise RequestInvalid([("model", f"--model {text!r} is not a catalog model; the server reads no file: "
                                            "POST the config.json as the request body")]) from None
        raise


def _fixed(uploaded: ModelSpec | None, **fields: str) -> dict[str, str]:
    """Fields the endpoint sets: the model, when a config.json body gives it."""
    return {**fields, **({"model": uploaded.name} if uploaded is not None else {})}


def estimate_job(catalog: Catalog, query: Query, uploaded: ModelSpec | None = None, *,
                 train: bool = False) -> BaseModel:
    """/v1/estimate (any mode, as `estimate`) and /v1/train (``--mode train``)."""
    fixed = _fixed(uploaded, **({"mode": "train"} if train else {}))
    p = parse("estimate", query, fixed)
    return estimate_request(estimate_request_of(p), catalog, _model(catalog, p, uploaded))


def plan_job(catalog: Catalog, query: Query, uploaded: ModelSpec | None = None) -> tuple[BaseModel, Table]:
    """/v1/plan: the PlanReport and its rows (`plan_rows`, as `plan --format csv` writes them)."""
    from estimator.render.plan_table import plan_rows

    p = parse("plan", query, _fixed(uploaded))
    report = plan_report(catalog, _model(catalog, p, uploaded), p)
    return report, plan_rows(report)


def sweep_job(catalog: Catalog, query: Query) -> tuple[Iterable[dict[str, Any]], Table]:
    """/v1/sweep: its rows; the grid's size is checked from the fields before anything is built."""
    p = parse("sweep", query)
    points = grid_points(p)
    if points > MAX_SWEEP_POINTS:  # a request's max_points may lower this limit, never raise it
        raise RequestInvalid([("query", too_many_points(points, MAX_SWEEP_POINTS, "a request holds no more; use "
                                                        "`estimator sweep -o grid.csv` (and --max-points) for more"))])
    result = sweep_result(sweep_grid(catalog, lambda name: named_model(catalog, name), p))
    return result.rows(), (result.keys, result)


def catalog_rows(catalog: Catalog, kind: str) -> tuple[list[dict[str, Any]], Table]:
    """/v1/gpus, /v1/models (the rows of `gpus`/`models --format json`), /v1/systems and /v1/formats."""
    rows = listed(catalog, kind)
    return rows, table_rows(rows)


def described(model: ModelSpec) -> tuple[list[dict[str, Any]], Table]:
    """/v1/models/config: an uploaded config.json read, as the one row of `models --format json` it would be."""
    rows = [model_row(model)]
    return rows, table_rows(rows)
