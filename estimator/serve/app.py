"""The HTTP app: routes, limits and errors (FastAPI loads here and only here).

Every route is thin: read the fields (and a config.json body), call `estimator.serve.jobs`, write the chosen format
with `estimator.serve.documents`. Input errors answer HTTP 422 with one entry per bad field, FastAPI's shape:
``{"detail": [{"loc": ["query", "batch"], "msg": "...", "type": "value_error"}]}``; nothing answers a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from estimator.catalog.registry import validation_message
from estimator.errors import EstimatorError, FieldInvalid, MissingDependency
from estimator.inference.report import Report
from estimator.planning.plan import PlanReport
from estimator.request.options import flag_of
from estimator.request.plan import plan_notes
from estimator.serve import jobs
from estimator.serve.documents import MEDIA_TYPES, Table, chosen_format, document_bytes
from estimator.serve.fields import MAX_QUERY_CHARS, RequestInvalid
from estimator.serve.openapi import FORMAT_FIELD, parameters
from estimator.training.report import TrainingReport

if TYPE_CHECKING:
    from pydantic import BaseModel

    from estimator.catalog.registry import Catalog

STATIC = Path(__file__).resolve().parent / "static"
# The page loads nothing from elsewhere: no CDN, no font, no analytics.
PAGE_POLICY = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'"
log = logging.getLogger("estimator.serve")
Job = Callable[[], tuple[Any, Table | None, str]]


def _error(status: int, errors: list[tuple[str, str]]) -> JSONResponse:
    where = ["body"] if errors and errors[0][0] == "body" else ["query"]
    return JSONResponse({"detail": [{"loc": [*where, f] if f not in ("body", "query") else where, "msg": m,
                                     "type": "value_error"} for f, m in errors]}, status_code=status)


def _named(message: str, query: list[tuple[str, str]]) -> str:
    """The field a message that names none is about: the one field whose value it quotes, else the query."""
    quoting = {key for key, value in query if value and repr(value) in message}
    return quoting.pop() if len(quoting) == 1 else "query"


def _located(error: EstimatorError, query: list[tuple[str, str]]) -> tuple[str, str]:
    """(field, message): a refusal of a field names it (FieldInvalid, raised at every layer), worded as the command
    line words it; any other error (an unknown name, a file) is located by the value it quotes."""
    if isinstance(error, FieldInvalid):
        return error.field, error.worded(flag_of)
    return _named(str(error), query), str(error)


def answer_error(error: Exception, query: list[tuple[str, str]]) -> JSONResponse:
    """An exception → one line per bad field, worded as the command line words it."""
    if isinstance(error, RequestInvalid):
        return _error(422, error.errors)
    if isinstance(error, MissingDependency):
        return _error(501, [("query", str(error))])
    if isinstance(error, EstimatorError):
        return _error(422, [_located(error, query)])
    if isinstance(error, ValidationError):
        return _error(422, [("query", validation_message(error))])
    if isinstance(error, (OverflowError, ZeroDivisionError)):
        return _error(422, [("query", f"numbers out of range: {error}")])
    log.exception("unexpected error")  # the server's log has the traceback; the answer has one line
    return _error(500, [("query", f"internal error ({type(error).__name__}); the server's log has the details")])


async def _body(request: Request) -> bytes:
    """The request body, refused past `jobs.MAX_BODY_BYTES` without reading more."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > jobs.MAX_BODY_BYTES:
        raise RequestInvalid([("body", f"a config.json body holds at most {jobs.MAX_BODY_BYTES:,} bytes")])
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > jobs.MAX_BODY_BYTES:
            raise RequestInvalid([("body", f"a config.json body holds at most {jobs.MAX_BODY_BYTES:,} bytes")])
        chunks.append(chunk)
    return b"".join(chunks)


async def _respond(request: Request, work: Callable[[], tuple[Any, Table | None, str]]) -> Response:
    """Run ``work`` (document, rows, sheet) off the event loop and answer in the format asked for."""
    try:
        if len(request.url.query) > MAX_QUERY_CHARS:
            return _error(414, [("query", f"a query holds at most {MAX_QUERY_CHARS:,} characters")])
        output_format = chosen_format(request.query_params.get("format"), request.headers.get("accept"))
        document, table, sheet = await run_in_threadpool(work)
        notes = plan_notes(document) if isinstance(document, PlanReport) else []  # as `plan -f xlsx` writes them
        body = await run_in_threadpool(document_bytes, output_format, document, table=table, sheet=sheet,
                                       notes=notes)
    except Exception as error:
        return answer_error(error, _query(request))
    headers = {}
    if output_format != "json":
        headers["Content-Disposition"] = f'attachment; filename="{sheet}.{output_format}"'
    return Response(body, media_type=MEDIA_TYPES[output_format], headers=headers)


def _query(request: Request) -> list[tuple[str, str]]:
    return list(request.query_params.multi_items())


def create_app(catalog: Catalog) -> FastAPI:
    """The app over ``catalog``: the API under /v1, the page at /, OpenAPI docs at /docs."""
    # FastAPIOffline: the same FastAPI app, with Swagger UI and ReDoc served from files in fastapi-offline's
    # package instead of a CDN, so /docs works with no network as the page does.
    app = FastAPIOffline(title="estimator", version="1", description=(
        "GPU memory and speed estimates. Each field is the CLI option of the same name (`prompt_tokens` is "
        "`--prompt-tokens`); answers are the CLI's `--format json` (or csv/xlsx with `?format=` or an Accept "
        "header)."))
    _report_routes(app, catalog)
    _catalog_routes(app, catalog)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Content-Security-Policy": PAGE_POLICY})

    return app


def _report_routes(app: FastAPI, catalog: Catalog) -> None:
    estimate_fields = parameters("estimate")
    train_fields = parameters("estimate", fixed=("mode",))
    plan_fields = parameters("plan")

    def estimate(request: Request, body: bytes | None, train: bool) -> Callable[[], tuple[Any, None, str]]:
        def work() -> tuple[BaseModel, None, str]:
            uploaded = None if body is None else jobs.uploaded_model(body)
            return jobs.estimate_job(catalog, _query(request), uploaded, train=train), None, "report"
        return work

    def plan(request: Request, body: bytes | None) -> Callable[[], tuple[Any, Table, str]]:
        def work() -> tuple[BaseModel, Table, str]:
            uploaded = None if body is None else jobs.uploaded_model(body)
            report, table = jobs.plan_job(catalog, _query(request), uploaded)
            return report, table, "plan"
        return work

    reports: dict[int | str, dict[str, Any]] = {200: {"model": Report | TrainingReport}}
    training: dict[int | str, dict[str, Any]] = {200: {"model": TrainingReport}}
    planned: dict[int | str, dict[str, Any]] = {200: {"model": PlanReport}}
    extra = {"parameters": estimate_fields}
    app.get("/v1/estimate", responses=reports, openapi_extra=extra, summary="estimate (as `estimate`)")(
        _route(lambda r, b: estimate(r, b, False)))
    app.post("/v1/estimate", responses=reports, openapi_extra={**extra, **_BODY},
             summary="estimate a config.json sent as the body")(_route(lambda r, b: estimate(r, b, False), True))
    app.get("/v1/train", responses=training, openapi_extra={"parameters": train_fields},
            summary="estimate --mode train")(_route(lambda r, b: estimate(r, b, True)))
    app.post("/v1/train", responses=training,
             openapi_extra={"parameters": train_fields, **_BODY},
             summary="estimate --mode train for a config.json body")(_route(lambda r, b: estimate(r, b, True), True))
    app.get("/v1/plan", responses=planned, openapi_extra={"parameters": plan_fields},
            summary="plan (as `estimator plan`)")(_route(plan))
    app.post("/v1/plan", responses=planned, openapi_extra={"parameters": plan_fields, **_BODY},
             summary="plan for a config.json body")(_route(plan, True))
    app.get("/v1/sweep", openapi_extra={"parameters": parameters("sweep")},
            summary="sweep (as `estimator sweep`): one row per point")(
        _route(lambda r, b: lambda: (*jobs.sweep_job(catalog, _query(r)), "sweep")))


_BODY = {"requestBody": {"required": True, "description": "A Hugging Face config.json, as `--model config.json` "
                         "reads it (at most 16 MiB).", "content": {"application/json": {"schema": {"type": "object"}}}}}


def _route(make: Callable[[Request, bytes | None], Callable[[], tuple[Any, Table | None, str]]],
           with_body: bool = False) -> Callable[[Request], Awaitable[Response]]:
    async def route(request: Request) -> Response:
        try:
            body = await _body(request) if with_body else None
        except RequestInvalid as error:
            return _error(413, error.errors)
        return await _respond(request, make(request, body))
    return route


def _catalog_routes(app: FastAPI, catalog: Catalog) -> None:
    def listing(kind: str) -> Callable[[Request], Awaitable[Response]]:
        async def route(request: Request) -> Response:
            def work() -> tuple[Any, Table, str]:
                extra = [k for k, _ in _query(request) if k != "format"]
                if extra:
                    raise RequestInvalid([(k, f"{k!r} is not a field of /v1/{kind}; fields: format") for k in extra])
                rows, table = jobs.catalog_rows(catalog, kind)
                return rows, table, kind
            return await _respond(request, work)
        return route

    for kind in ("gpus", "systems", "models", "formats"):
        app.get(f"/v1/{kind}", summary=f"the {kind} catalog",
                openapi_extra={"parameters": [FORMAT_FIELD]})(listing(kind))

    async def config(request: Request) -> Response:
        try:
            body = await _body(request)
        except RequestInvalid as error:
            return _error(413, error.errors)
        return await _respond(request, lambda: (*jobs.described(jobs.uploaded_model(body)), "model"))

    app.post("/v1/models/config", summary="read a config.json sent as the body", openapi_extra=_BODY)(config)

