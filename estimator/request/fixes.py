"""What would make a job fit: the changes of its options, each re-estimated, ranked as `estimator oom` ranks them.

One list of changes serves `estimate` (table, JSON, the HTTP API and the page: `fixes`), and `oom`
(`changes_of`, `fix_of`). A change is a new request (`Change.apply`), so the estimate re-run is the one every
command runs. The ranking is `estimator.oom.explain.rank`: those that fit first, then by cost (none < time <
quality < hardware), then by time, then by memory freed. Where a change comes in steps (split the batch in 2, 4,
8...; 2, 4, 8 GPUs), the smallest step that fits is offered, else the largest tried, to show how far it gets. A
change that frees nothing is never offered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from estimator.errors import EstimatorError
from estimator.report import Cost, Fix
from estimator.request.choices import Attention, Logits, Optimizer, Recompute
from estimator.request.models import EstimateRequest

if TYPE_CHECKING:
    from estimator.inference.report import Report
    from estimator.training.report import TrainingReport

    AnyReport = Report | TrainingReport

LORA_RANK = 16  # the rank a full fine-tune is offered as a LoRA run (PEFT's LoraConfig examples use 8 to 16)
SHOWN = 5  # the most changes `estimate` and `plan` list: the best first


@dataclass(frozen=True)
class Change:
    """One change: its flags as the user types them, the request it gives, its cost, and the passes a job then
    runs (a batch split in k runs k times)."""

    label: str
    apply: Callable[[EstimateRequest], EstimateRequest]
    cost: Cost
    detail: str
    passes: int = 1


def _job(**fields: object) -> Callable[[EstimateRequest], EstimateRequest]:
    return lambda r: r.model_copy(update={"job": r.job.model_copy(update=fields)})


def _hardware(**fields: object) -> Callable[[EstimateRequest], EstimateRequest]:
    return lambda r: r.model_copy(update={"hardware": r.hardware.model_copy(update=fields)})


def _training(batch: int | None = None, **fields: object) -> Callable[[EstimateRequest], EstimateRequest]:
    def apply(r: EstimateRequest) -> EstimateRequest:
        job = r.job.model_copy(update={"training": r.job.training.model_copy(update=fields),
                                       **({} if batch is None else {"batch": batch})})
        return r.model_copy(update={"job": job})
    return apply


def _first_fitting(build: Callable[[int], Change], values: Sequence[int],
                   fits: Callable[[Change], bool]) -> list[Change]:
    """The first of ``values`` whose change fits, else the last one tried (to show how far it gets)."""
    tried = [build(v) for v in values]
    for change in tried:
        if fits(change):
            return [change]
    return tried[-1:]


def inference_changes(report: Report, fits: Callable[[Change], bool]) -> list[Change]:
    """The changes of a serving job: logits, a smaller batch in passes, fp8 KV cache and weights, more GPUs."""
    w = report.workload
    out = []
    if w.logits == "all":
        out.append(Change("--logits last", _job(logits=Logits.last), "none",
                          "logits of the last position only, enough to generate (transformers: logits_to_keep=1)"))
    if w.batch > 1:
        splits = [k for k in (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if k <= w.batch]
        out += _first_fitting(lambda k: Change(f"--batch {-(-w.batch // k)} ({k} passes)",
                                               _job(batch=-(-w.batch // k)), "time", f"{k} passes over the batch",
                                               passes=k), splits, fits)
    if w.kv_dtype not in ("fp8", "int8"):
        out.append(Change("--kv-dtype fp8", _job(kv_dtype="fp8"), "quality", "fp8 KV cache, as serving engines offer"))
    if w.dtype in ("fp32", "fp16", "bf16"):
        out.append(Change("--dtype fp8", _job(dtype="fp8"), "quality", "fp8 weights"))
        out.append(Change("--dtype awq-int4", _job(dtype="awq-int4"), "quality", "4-bit AWQ weights"))
    out += _first_fitting(lambda n: Change(f"--gpus {w.gpus * n}", _hardware(gpus=w.gpus * n), "hardware",
                                           f"{w.gpus * n} GPUs, tensor parallel"), [2, 4, 8], fits)
    return out


def training_changes(report: TrainingReport, fits: Callable[[Change], bool]) -> list[Change]:
    """The changes of a training step: attention kernel, optimizer, recomputation, micro-batches, ZeRO-3 over more
    GPUs, and a lighter method (LoRA for a full fine-tune, a 4-bit base for a LoRA run)."""
    w = report.workload
    out = []
    if w.attention == "eager":
        out.append(Change("--attention sdpa", _training(attention=Attention.sdpa), "none",
                          "PyTorch SDPA's fused kernels keep no score matrix"))
    if w.optimizer == "adamw":
        out += [Change("--optimizer adamw-fused", _training(optimizer=Optimizer.adamw_fused), "none",
                       "torch.optim.AdamW(fused=True) updates in place: no step temporaries"),
                Change("--optimizer adam-8bit", _training(optimizer=Optimizer.adam_8bit), "quality",
                       "bitsandbytes 8-bit states")]
    if w.recompute == "none":
        out.append(Change("--recompute full", _training(recompute=Recompute.full), "time",
                          "one more forward per step"))
    if w.batch > 1:
        splits = [k for k in (2, 4, 8, 16, 32, 64) if k <= w.batch and w.batch % k == 0]
        out += _first_fitting(lambda k: Change(f"--batch {w.batch // k} --grad-accum {w.grad_accum * k}",
                                               _training(batch=w.batch // k, grad_accum=w.grad_accum * k), "time",
                                               "same tokens per step in more micro-batches"), splits, fits)
    if w.lora_rank is None:
        out.append(Change(f"--lora-rank {LORA_RANK}", _training(lora_rank=LORA_RANK), "quality",
                          "train LoRA adapters on a frozen base: no gradients or optimizer states for the base"))
    elif w.qlora is None:
        out.append(Change("--qlora", _training(qlora=True), "quality", "QLoRA: the frozen base in 4-bit NF4"))
    if w.zero == 0 and w.fsdp is None:
        out += _first_fitting(lambda n: Change(f"--dp {w.dp * n} --zero 3", _training(dp=w.dp * n, zero=3),
                                               "hardware", f"{w.dp * n} GPUs sharing parameters, gradients and "
                                               "states (ZeRO-3)"), [2, 4, 8], fits)
    return out


def job_time_s(report: AnyReport, passes: int) -> float:
    """The job's expected time: a training step, or ``passes`` × (prefill + decode) of an inference batch."""
    from estimator.training.report import TrainingReport

    if isinstance(report, TrainingReport):
        return report.time.step_s
    t = report.time
    return passes * (t.prefill_s + report.workload.output_tokens * (t.decode_step_s or 0.0))


Estimator = Callable[[EstimateRequest], "AnyReport"]


def changes_of(request: EstimateRequest, report: AnyReport, estimate: Estimator,
               fits: Callable[[int], bool]) -> list[tuple[Change, AnyReport]]:
    """Each change of ``report``'s job with its re-run estimate (those the model or card cannot take left out:
    heads not divisible by the GPUs, a format the card lacks); ``fits`` says whether a per-GPU figure fits."""
    from estimator.training.report import TrainingReport

    cache: dict[str, AnyReport | None] = {}

    def run(change: Change) -> AnyReport | None:
        if change.label not in cache:
            try:
                cache[change.label] = estimate(change.apply(request))
            except EstimatorError:
                cache[change.label] = None
        return cache[change.label]

    def change_fits(change: Change) -> bool:
        changed = run(change)
        return changed is not None and fits(changed.memory.per_gpu_bytes)

    changes = (training_changes(report, change_fits) if isinstance(report, TrainingReport)
               else inference_changes(report, change_fits))
    return [(change, changed) for change in changes if (changed := run(change)) is not None]


def fix_of(change: Change, changed: AnyReport, report: AnyReport, fits: Callable[[int], bool]) -> Fix:
    """What ``change`` gives: the per-GPU memory after it, what it frees, whether it fits, its time factor."""
    base_s = job_time_s(report, 1)
    per_gpu = changed.memory.per_gpu_bytes
    return Fix(change=change.label, frees_bytes=report.memory.per_gpu_bytes - per_gpu, per_gpu_bytes=per_gpu,
               fits=fits(per_gpu), cost=change.cost, cost_detail=change.detail,
               time_factor=round(job_time_s(changed, change.passes) / base_s, 3) if base_s else None)


def ranked(request: EstimateRequest, report: AnyReport, estimate: Estimator,
           fits: Callable[[int], bool]) -> list[tuple[Fix, Change, AnyReport]]:
    """Each change that frees memory, with what it gives, best first (`estimator.oom.explain.rank`)."""
    from estimator.oom.explain import rank

    found = {id(fix): (fix, change, changed) for change, changed in changes_of(request, report, estimate, fits)
             if ((fix := fix_of(change, changed, report, fits)).frees_bytes or 0) > 0}
    return [found[id(fix)] for fix in rank([fix for fix, _, _ in found.values()])]


MAX_COMBINED = 6  # changes combined at most before giving up: there are at most seven kinds of change


def combined(request: EstimateRequest, report: AnyReport, estimate: Estimator,
             fits: Callable[[int], bool]) -> Fix | None:
    """When no change fits alone: the best-ranked change applied, then the best-ranked of what is left on the
    changed job, and so on until it fits; None when even all of them do not."""
    labels: list[str] = []
    costs: list[Cost] = []
    current, current_report, passes = request, report, 1
    for _ in range(MAX_COMBINED):
        options = ranked(current, current_report, estimate, fits)
        if not options:
            return None
        _, change, changed = options[0]
        labels.append(change.label)
        costs.append(change.cost)
        current, current_report, passes = change.apply(current), changed, passes * change.passes
        if fits(changed.memory.per_gpu_bytes):
            together = Change(" ".join(labels), lambda r: r, max(costs, key=COST_RANK.index),
                              "these changes together, each the best of what was left", passes)
            return fix_of(together, changed, report, fits)
    return None


COST_RANK: tuple[Cost, ...] = ("none", "time", "quality", "hardware")


def fixes(request: EstimateRequest, report: AnyReport, estimate: Estimator) -> tuple[Fix, ...]:
    """The changes that would make a job that does not fit fit, best first (at most `SHOWN`): those that fit
    alone; when none does, the best-ranked changes that fit together (`combined`), then each change alone with
    how far it gets. A change that frees nothing is left out."""
    capacity = report.memory.capacity_bytes

    def fits(per_gpu: int) -> bool:
        return per_gpu <= capacity

    alone = [fix for fix, _, _ in ranked(request, report, estimate, fits)]
    if alone and alone[0].fits:
        return tuple(fix for fix in alone if fix.fits)[:SHOWN]
    together = combined(request, report, estimate, fits)
    return tuple(([] if together is None else [together]) + alone)[:SHOWN]
