"""The `oom` command: read what a failed job said, reconcile it with the estimate of its workload, rank changes.

The workload is given with `estimate`'s own options (after the oom options); every change is the estimate re-run
with that change applied, through the same `report_for_params` that `estimate` uses.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from estimator.cli.estimate import estimate_params, report_for_params
from estimator.cli.options import OutputFormat, Units, catalog_for, check_format, console
from estimator.errors import WorkloadInvalid
from estimator.inference.report import Report
from estimator.oom.evidence import gather
from estimator.oom.explain import explain, fits_after, reconcile
from estimator.oom.report import Card, Evidence, OomReport, Prediction, Suggestion, TermLine
from estimator.oom.tensors import Tensor, inference_tensors, training_tensors
from estimator.render.formats import write_report
from estimator.render.oom_table import render_oom
from estimator.training.report import TrainingReport

AnyReport = Report | TrainingReport
MAX_INPUT_BYTES = 1 << 30  # 1 GiB from a file or stdin: a _dump_snapshot pickle of a long job is tens of MB
OOM_FORMATS = (OutputFormat.table, OutputFormat.json)


def _read(sources: list[Path]) -> list[tuple[str, bytes]]:
    if not sources:
        if sys.stdin.isatty():
            raise WorkloadInvalid("give the failed job's output with --from FILE (or pipe it to stdin)")
        return [("stdin", sys.stdin.buffer.read(MAX_INPUT_BYTES))]
    out = []
    for path in sources:
        if str(path) == "-":
            out.append(("stdin", sys.stdin.buffer.read(MAX_INPUT_BYTES)))
            continue
        try:
            with path.open("rb") as file:
                raw = file.read(MAX_INPUT_BYTES + 1)  # never more than the ceiling, whatever the file is
        except OSError as error:
            raise WorkloadInvalid(f"cannot read {path}: {error.strerror or error}") from None
        if len(raw) > MAX_INPUT_BYTES:
            raise WorkloadInvalid(f"{path}: larger than {MAX_INPUT_BYTES >> 30} GiB, the most oom reads from one file")
        out.append((str(path), raw))
    return out


def prediction_of(report: AnyReport, options: str) -> Prediction:
    """The estimate's terms, as the report names them."""
    m = report.memory
    if isinstance(report, TrainingReport):
        t = report.memory
        terms = [("weights", t.weights_bytes), ("gradients", t.gradient_bytes), ("master weights",
                 t.master_weights_bytes), ("optimizer states", t.optimizer_bytes), ("autocast copies",
                 t.autocast_copy_bytes), ("activations", t.activation_bytes), ("output layer", t.output_layer_bytes),
                 ("loss gradients", t.loss_backward_bytes), ("optimizer-step temporaries", t.optimizer_step_bytes)]
        phase: str | None = t.peak_phase
    else:
        r = report.memory
        terms = [("weights", r.weights_bytes), ("kv cache", r.kv_cache_bytes or 0),
                 ("activations (prefill peak)", r.activation_bytes or 0)]
        phase = None
    return Prediction(options=options, per_gpu_bytes=m.per_gpu_bytes, capacity_bytes=m.capacity_bytes, fits=m.fits,
                      peak_phase=phase, tensor_bytes=m.per_gpu_bytes - m.overhead_bytes,
                      overhead_bytes=m.overhead_bytes,
                      terms=tuple(TermLine(name=n, bytes=b) for n, b in terms if b))


def tensors_of(p: dict[str, Any], report: AnyReport) -> list[Tensor]:
    arch = catalog_for(None if p["specs_dir"] is None else Path(p["specs_dir"])).model(p["model"]).arch
    if arch is None:
        return []
    if isinstance(report, TrainingReport):
        return training_tensors(arch, report)
    w = report.workload
    return inference_tensors(arch, batch=w.batch, tokens=w.prompt_tokens, logits_all=w.logits == "all",
                             element_bytes=4 if w.dtype == "fp32" else 2, tensor_parallel=w.gpus)


def suggestions(p: dict[str, Any], report: AnyReport, card: Card, prediction: Prediction) -> list[Suggestion]:
    """Each change of `estimate`'s list (`estimator.request.fixes`) re-estimated: what it frees, whether it fits
    beside what the estimate does not cover. A change that frees nothing is not offered."""
    from estimator.request.convert import estimate_request_of
    from estimator.request.estimate import estimate_alone
    from estimator.request.fixes import changes_of, fix_of

    request = estimate_request_of(p)
    catalog = catalog_for(request.specs_dir)
    model = catalog.model(request.job.model)

    def fits(per_gpu: int) -> bool:
        return fits_after(card, prediction, per_gpu)

    found = [fix_of(change, changed, report, fits)
             for change, changed in changes_of(request, report, lambda r: estimate_alone(r, catalog, model), fits)]
    return [Suggestion(**fix.model_dump(), source="estimate") for fix in found if (fix.frees_bytes or 0) > 0]


def oom_report(inputs: list[tuple[str, bytes]], workload: list[str]) -> OomReport:
    """The OomReport for the failed job's output and (optionally) `estimate` options of its workload."""
    evidence: Evidence = gather(inputs)
    if not workload:
        return explain(evidence)
    p = estimate_params(workload)
    report = report_for_params(p)
    prediction = prediction_of(report, " ".join(workload))
    card = reconcile(evidence)
    return explain(evidence, prediction=prediction, tensors=tensors_of(p, report),
                   suggestions=suggestions(p, report, card, prediction))


def oom_command(
    ctx: typer.Context,
    sources: Annotated[list[Path] | None, typer.Option("--from", help="A file the failed job wrote: the "
                                                       "OutOfMemoryError text, memory_summary(), nvidia-smi, or a "
                                                       "_dump_snapshot pickle. Repeat for several; '-' or none: "
                                                       "stdin.")] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="table or json.")]
    = OutputFormat.table,
    units: Annotated[Units, typer.Option(help="Table units: gib (as PyTorch prints) or gb.")] = Units.gib,
) -> None:
    """Explain an out-of-memory error.

    \b
    Examples:
      estimator oom --from err.txt
      estimator oom --from err.txt --from snapshot.pickle --model llama-3.2-1b --gpu h200 --batch 1024
      python train.py 2>&1 | estimator oom --model llama-3.2-1b --gpu h200 --mode train --batch 16

    The workload takes every option of `estimate`, --mode train too.
    """
    check_format(output_format, OOM_FORMATS)
    report = oom_report(_read(list(sources or [])), list(ctx.args))
    if output_format is OutputFormat.json:
        write_report("json", report)
    else:
        render_oom(report, console(), binary=units is Units.gib)
