"""The `oom` command: read what a failed job said, reconcile it with the estimate of its workload, rank changes.

The workload is given with `estimate`'s own options (after the oom options); every change is the estimate re-run
with that change applied, through the same `report_for_params` that `estimate` uses.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from estimator.cli.estimate import estimate_params, report_for_params
from estimator.cli.options import OutputFormat, Units, catalog_for, check_format, console
from estimator.errors import EstimatorError, WorkloadInvalid
from estimator.inference.report import Report
from estimator.oom.evidence import gather
from estimator.oom.explain import explain, fits_after, reconcile
from estimator.oom.report import Card, Cost, Evidence, OomReport, Prediction, Suggestion, TermLine
from estimator.oom.tensors import Tensor, inference_tensors, training_tensors
from estimator.render.formats import write_report
from estimator.render.oom_table import render_oom
from estimator.request.choices import Attention, Optimizer, Recompute
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


def job_time_s(report: AnyReport, passes: int) -> float:
    """The job's expected time: a training step, or ``passes`` × (prefill + decode) of an inference batch."""
    if isinstance(report, TrainingReport):
        return report.time.step_s
    t = report.time
    return passes * (t.prefill_s + report.workload.output_tokens * (t.decode_step_s or 0.0))


@dataclass(frozen=True)
class Change:
    label: str
    overrides: dict[str, Any]
    cost: Cost
    detail: str
    passes: int = 1


def _first_fitting(build: Callable[[int], Change], values: list[int], fits: Callable[[Change], bool]) -> list[Change]:
    """The first of ``values`` whose change fits, else the last one tried (to show how far it gets)."""
    tried = [build(v) for v in values]
    for change in tried:
        if fits(change):
            return [change]
    return tried[-1:]


def inference_changes(p: dict[str, Any], report: Report, fits: Callable[[Change], bool]) -> list[Change]:
    w = report.workload
    out = []
    if w.logits == "all":
        out.append(Change("--logits last", {"logits": "last"}, "none",
                          "logits of the last position only, enough to generate (transformers: logits_to_keep=1)"))
    if w.batch > 1:
        splits = [k for k in (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if k <= w.batch]
        out += _first_fitting(lambda k: Change(f"--batch {-(-w.batch // k)} ({k} passes)",
                                               {"batch": str(-(-w.batch // k))}, "time",
                                               f"{k} passes over the batch", passes=k), splits, fits)
    if w.kv_dtype not in ("fp8", "int8"):
        out.append(Change("--kv-dtype fp8", {"kv_dtype": "fp8"}, "quality", "fp8 KV cache, as serving engines offer"))
    if w.dtype in ("fp32", "fp16", "bf16"):
        out.append(Change("--dtype fp8", {"dtype": "fp8"}, "quality", "fp8 weights"))
    out += _first_fitting(lambda n: Change(f"--gpus {n}", {"gpus": str(w.gpus * n)}, "hardware",
                                           f"{w.gpus * n} GPUs, tensor parallel"), [2, 4, 8], fits)
    return out


def training_changes(p: dict[str, Any], report: TrainingReport, fits: Callable[[Change], bool]) -> list[Change]:
    w = report.workload
    out = []
    if w.attention == "eager":
        out.append(Change("--attention sdpa", {"attention": Attention.sdpa}, "none",
                          "PyTorch SDPA's fused kernels keep no score matrix"))
    if w.optimizer == "adamw":
        out += [Change("--optimizer adamw-fused", {"optimizer": Optimizer.adamw_fused}, "none",
                       "torch.optim.AdamW(fused=True) updates in place: no step temporaries"),
                Change("--optimizer adam-8bit", {"optimizer": Optimizer.adam_8bit}, "quality",
                       "bitsandbytes 8-bit states")]
    if w.recompute == "none":
        out.append(Change("--recompute full", {"recompute": Recompute.full}, "time", "one more forward per step"))
    if w.batch > 1:
        splits = [k for k in (2, 4, 8, 16, 32, 64) if k <= w.batch and w.batch % k == 0]
        out += _first_fitting(lambda k: Change(f"--batch {w.batch // k} --grad-accum {w.grad_accum * k}",
                                               {"batch": str(w.batch // k), "grad_accum": str(w.grad_accum * k)},
                                               "time", "same tokens per step in more micro-batches"), splits, fits)
    if w.zero == 0 and w.fsdp is None:
        out += _first_fitting(lambda n: Change(f"--dp {w.dp * n} --zero 3", {"dp": str(w.dp * n), "zero": "3"},
                                               "hardware", f"{w.dp * n} GPUs sharing parameters, gradients and "
                                               "states (ZeRO-3)"), [2, 4, 8], fits)
    return out


def suggestions(p: dict[str, Any], report: AnyReport, card: Card, prediction: Prediction) -> list[Suggestion]:
    """Each change re-estimated: what it frees, whether it fits beside what the estimate does not cover."""
    cache: dict[str, AnyReport] = {}

    def estimate_with(change: Change) -> AnyReport:
        if change.label not in cache:
            cache[change.label] = report_for_params({**p, **change.overrides})
        return cache[change.label]

    def fits(change: Change) -> bool:
        return fits_after(card, prediction, estimate_with(change).memory.per_gpu_bytes)

    changes = (training_changes(p, report, fits) if isinstance(report, TrainingReport)
               else inference_changes(p, report, fits))
    base_s = job_time_s(report, 1)
    out = []
    for change in changes:
        try:
            changed = estimate_with(change)
        except EstimatorError:
            continue  # a change this model or card cannot take (e.g. heads not divisible by the GPUs)
        per_gpu = changed.memory.per_gpu_bytes
        out.append(Suggestion(change=change.label, frees_bytes=prediction.per_gpu_bytes - per_gpu,
                              per_gpu_bytes=per_gpu, fits=fits_after(card, prediction, per_gpu), cost=change.cost,
                              cost_detail=change.detail, time_factor=round(job_time_s(changed, change.passes) /
                                                                            base_s, 3) if base_s else None,
                              source="estimate"))
    return out


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
