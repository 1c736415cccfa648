"""A training request (``mode`` train): the options of the other mode refused in one line, the training workload
built from the typed request, and its TrainingReport."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from estimator.request.choices import Attention, Mode, Optimizer, Precision, Recompute
from estimator.request.errors import FieldInvalid
from estimator.request.options import OPTIONS

if TYPE_CHECKING:
    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.registry import Catalog
    from estimator.request.models import EstimateRequest
    from estimator.training.report import TrainingReport

QLORA_FORMAT = "nf4-dq"  # QLoRA paper: NF4 with double quantization (specs/quant/nf4-dq.yaml)

# Each inference-only field of `estimate`: its default as given, and what --mode train offers instead (every
# option takes effect in every mode or is refused in one line naming the mode's equivalent).
INFERENCE_ONLY: dict[str, tuple[str | None, str]] = {
    "gpus": ("1", "use {tp}, {pp} and {dp} in {mode} train"),
    "prompt_tokens": ("2048", "use {seq_len} in {mode} train"),
    "output_tokens": (OPTIONS["output_tokens"].default, "use {seq_len} in {mode} train"),
    "dtype": (None, "use {precision}, or {qlora} for a 4-bit NF4 base, in {mode} train"),
    "kv_dtype": (None, "{mode} train keeps no KV cache"),
    "logits": ("last", "{mode} train computes logits at every position"),
    "mla_cache": (None, "{mode} train keeps no KV cache"),
    "group_size": (None, "{qlora}'s NF4 base has its format's group size"),
    "calibration": (None, "{mode} train takes the profile uncalibrated"),
    "plot": (None, "no chart is drawn for {mode} train; use {output_format} json for its figures"),
}
TRAINING_FIELDS = ("seq_len", "grad_accum", "precision", "optimizer", "recompute", "attention", "zero", "fsdp", "dp",
                   "tp", "pp", "cp", "virtual_stages", "sequence_parallel", "lora_rank", "lora_targets", "qlora")


def _given(value: Any) -> str | None:
    return None if value is None else str(getattr(value, "value", value))


def reject_other_mode(mode: Mode, p: Mapping[str, Any]) -> None:
    """The options of the other mode, as given, refused in one line: in train mode each inference-only field
    set away from its default names its training equivalent; in infer mode the training fields given."""
    if mode is Mode.train:
        given = [field for field, (default, _) in INFERENCE_ONLY.items() if _given(p[field]) != default]
        if given:
            raise FieldInvalid(given[0], ". ".join("{" + f + "} applies to inference; " + INFERENCE_ONLY[f][1]
                                                   for f in given))
        if p["system"] is None and (p["nodes"] is not None or p["gpus_per_node"] is not None):
            raise FieldInvalid("nodes", "{nodes} and {gpus_per_node} with {mode} train need {system}")
        return
    given = [field for field in TRAINING_FIELDS if p[field] not in (None, False)]
    if given:
        raise FieldInvalid(given[0], ", ".join("{" + f + "}" for f in given)
                           + f" appl{'ies' if len(given) == 1 else 'y'} to {{mode}} train")


def training_report(catalog: Catalog, model: ModelSpec, request: EstimateRequest) -> TrainingReport:
    """The TrainingReport of a ``mode`` train request. A server is used only when named: a card alone keeps its
    listed link for every group."""
    from pydantic import ValidationError

    from estimator.request.errors import located
    from estimator.request.hardware import resolve, with_gpu_memory
    from estimator.training.estimate import estimate_training
    from estimator.training.workload import ALL_LORA_TARGETS, TrainingWorkload

    hw, t = request.hardware, request.job.training
    resolved = resolve(catalog, hw, 1)
    gpu = with_gpu_memory(resolved.gpu, hw.gpu_memory)
    if t.lora_targets is not None and t.lora_rank is None:
        raise FieldInvalid("lora_targets", "{lora_targets} needs {lora_rank}")
    try:
        workload = TrainingWorkload(
            batch=request.job.batch, seq_len=t.seq_len or 2048, grad_accum=t.grad_accum or 1,
            precision=(t.precision or Precision.amp_bf16).value, optimizer=(t.optimizer or Optimizer.adamw).value,
            recompute=(t.recompute or Recompute.none).value, attention=(t.attention or Attention.sdpa).value,
            zero=t.zero or 0, fsdp=None if t.fsdp is None else t.fsdp.value, dp=t.dp or 1, tp=t.tp or 1,
            pp=t.pp or 1, virtual_stages=t.virtual_stages or 1, cp=t.cp or 1, ep=hw.ep or 1,
            sequence_parallel=t.sequence_parallel, lora_rank=t.lora_rank,
            lora_targets=ALL_LORA_TARGETS if t.lora_targets is None else t.lora_targets,
            qlora=catalog.formats.get(QLORA_FORMAT) if t.qlora else None,
            profile=catalog.profiles.get(request.job.profile))
    except ValidationError as error:  # the workload's own check raises a FieldInvalid, kept in pydantic's context
        raise located(error, {name: name for name in (*TRAINING_FIELDS, "batch", "ep")}) from None
    return estimate_training(model, gpu, workload, requested_gpu=hw.gpu or "",
                             system=resolved.system if hw.system is not None else None, nodes=resolved.nodes)
