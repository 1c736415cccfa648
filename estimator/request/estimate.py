"""Run a request: `estimate_request` gives the Report (or, for ``mode`` train, the TrainingReport) of a typed
`EstimateRequest`, choosing its hardware and formats as the CLI does; `estimate_for` builds the request from option
values first (``estimate_for(model="llama-3.1-8b", gpu="h100", gpus=8, prompt_tokens="8k")``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from estimator.request.choices import Mode

if TYPE_CHECKING:
    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.registry import Catalog
    from estimator.inference.report import Report
    from estimator.request.models import EstimateRequest
    from estimator.training.report import TrainingReport


def catalog_for(specs_dir: Path | None) -> Catalog:
    """The packaged catalog with the user's specs folder (`user_specs_dir`), then ``specs_dir``, laid over it: a
    file there adds a card, model or system, or replaces the packaged file of the same name."""
    from estimator.catalog.files import user_specs_dir
    from estimator.catalog.registry import Catalog, default_catalog

    over = tuple(folder for folder in (user_specs_dir(), specs_dir) if folder is not None)
    return Catalog.load(over=over) if over else default_catalog()


def estimate_request(request: EstimateRequest, catalog: Catalog | None = None,
                     model: ModelSpec | None = None) -> Report | TrainingReport:
    """The report of ``request``: read over ``catalog`` (default: the request's specs_dir, else the packaged one),
    for ``model`` when given (a config.json already read), else the request's model name. A job that does not fit
    ends with the changes that would make it fit (`estimator.request.fixes`)."""
    chosen = catalog_for(request.specs_dir) if catalog is None else catalog
    spec = chosen.model(request.job.model) if model is None else model
    return with_fixes(request, estimate_alone(request, chosen, spec), chosen, spec)


def with_fixes(request: EstimateRequest, report: Report | TrainingReport, catalog: Catalog,
               model: ModelSpec) -> Report | TrainingReport:
    """``report``, and when its job does not fit, the changes that would make it fit (`estimator.request.fixes`),
    each re-estimated by `estimate_alone`."""
    if report.memory.fits:
        return report
    from estimator.request.fixes import fixes

    found = fixes(request, report, lambda changed: estimate_alone(changed, catalog, model))
    return report.model_copy(update={"fixes": found})


def estimate_alone(request: EstimateRequest, catalog: Catalog, model: ModelSpec) -> Report | TrainingReport:
    """The report of ``request`` without the changes that would make it fit (what each change re-runs)."""
    if request.job.mode is Mode.train:
        from estimator.request.training import training_report

        return training_report(catalog, model, request)
    return inference_report(catalog, model, request)


def estimate_for(catalog: Catalog | None = None, **values: Any) -> Report | TrainingReport:
    """The report for the estimate command's options given as keyword arguments, by field name (texts such as
    ``"8k"`` or numbers); each converted and checked as the CLI converts it."""
    from estimator.request.convert import estimate_request_of

    return estimate_request(estimate_request_of(values), catalog)


def inference_report(catalog: Catalog, model: ModelSpec, request: EstimateRequest) -> Report:
    """The inference Report of a request."""
    from estimator.inference.estimate import estimate
    from estimator.live.calibration import calibrated_profile
    from estimator.request.formats import kv_format, weights_format, workload_of
    from estimator.request.hardware import resolve, with_gpu_memory

    job, hw = request.job, request.hardware
    experts = 1 if hw.ep is None else hw.ep
    resolved = resolve(catalog, hw, max(hw.gpus, experts))
    gpu = with_gpu_memory(resolved.gpu, hw.gpu_memory)
    weights = weights_format(catalog, model, job.dtype, job.group_size)
    profile = calibrated_profile(catalog.profiles.get(job.profile), gpu, request.calibration)
    workload = workload_of(
        batch=job.batch, prompt_tokens=job.prompt_tokens, output_tokens=job.output_tokens,
        weight_format=weights, kv_format=kv_format(catalog, weights, _kv_dtype(request)), tensor_parallel=hw.gpus,
        logits=job.logits.value, mla_cache=None if job.mla_cache is None else job.mla_cache.value, profile=profile)
    report = estimate(model, gpu, workload, requested_gpu=hw.gpu or "", system=resolved.system,
                      nodes=resolved.nodes, system_assumed=resolved.assumed, gpu_alone=hw.system is None, ep=experts)
    if request.engine is None:
        return report
    from estimator.request.engine import with_engine

    return with_engine(report, request.engine, model, gpu, workload)


def _kv_dtype(request: EstimateRequest) -> str | None:
    """The KV format asked: --kv-dtype, or the engine's --kv-cache-dtype in the estimate's words."""
    if request.engine is None or request.engine.kv_cache_dtype == "auto":
        return request.job.kv_dtype
    from estimator.request.engine import KV_CACHE_DTYPES

    return KV_CACHE_DTYPES[request.engine.kv_cache_dtype]
