"""The ``--mode train`` branch of the ``estimate`` command: option types, workload construction, rendering."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.registry import Catalog, validation_message
from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.cli.options import positive, print_table
from estimator.errors import WorkloadInvalid
from estimator.render.formats import write_report
from estimator.render.training_table import render_training_table
from estimator.training.estimate import estimate_training
from estimator.training.options import Attention, Optimizer, Precision, Recompute
from estimator.training.report import TrainingReport
from estimator.training.workload import ALL_LORA_TARGETS, TrainingWorkload, parse_lora_targets

QLORA_FORMAT = "nf4-dq"  # QLoRA paper: NF4 with double quantization (specs/quant/nf4-dq.yaml)


# Each inference-only option of `estimate`: its default, and what --mode train offers instead (issue 13: every
# option takes effect in every mode or is refused in one line naming the mode's equivalent).
INFERENCE_ONLY: dict[str, tuple[Any, str]] = {
    "--gpus": ("1", "use --tp, --pp and --dp in --mode train"),
    "--prompt-tokens": ("2048", "use --seq-len in --mode train"),
    "--output-tokens": ("0", "use --seq-len in --mode train"),
    "--dtype": (None, "use --precision, or --qlora for a 4-bit NF4 base, in --mode train"),
    "--kv-dtype": (None, "--mode train keeps no KV cache"),
    "--logits": ("last", "--mode train computes logits at every position"),
    "--mla-cache": (None, "--mode train keeps no KV cache"),
    "--group-size": (None, "--qlora's NF4 base has its format's group size"),
    "--calibration": (None, "--mode train takes the profile uncalibrated"),
    "--plot": (None, "no chart is drawn for --mode train; use --format json for its figures"),
}


def reject_inference_options(options: dict[str, Any]) -> None:
    """In --mode train, an inference-only option set away from its default is refused in one line that names
    the training equivalent, e.g. "--gpus applies to inference; use --tp, --pp and --dp in --mode train"."""
    given = [flag for flag, value in options.items()
             if getattr(value, "value", value) != INFERENCE_ONLY[flag][0]]
    if given:
        raise WorkloadInvalid(". ".join(f"{flag} applies to inference; {INFERENCE_ONLY[flag][1]}" for flag in given))


def _count(name: str, text: str | None, default: int) -> int:
    return default if text is None else positive(name, text)


def show_training(report: TrainingReport, *, output_format: str, binary: bool, explain: bool,
                  output: Path | None = None) -> None:
    """Write the training report to stdout (or ``output``): the table, or the chosen file format."""
    if output_format == "table":
        print_table(output, lambda out: render_training_table(report, out, binary=binary, explain=explain))
    else:
        write_report(output_format, report, output)


def training_report(catalog: Catalog, model: ModelSpec, gpu: GpuSpec, *, requested_gpu: str, batch: str,
                    profile: str, options: dict[str, Any], system: SystemSpec | None = None,
                    nodes: int = 1) -> TrainingReport:
    """The TrainingReport for `estimate --mode train`'s options (keyed by flag, as typed on the command line)."""
    o = options
    zero = 0 if o["--zero"] is None else {"0": 0, "1": 1, "2": 2, "3": 3}.get(str(o["--zero"]).strip(), -1)
    if zero not in (0, 1, 2, 3):
        raise WorkloadInvalid(f"--zero must be 0, 1, 2 or 3, got {o['--zero']!r}")
    lora_rank = None if o["--lora-rank"] is None else _count("--lora-rank", o["--lora-rank"], 0)
    targets = ALL_LORA_TARGETS if o["--lora-targets"] is None else parse_lora_targets(o["--lora-targets"])
    if o["--lora-targets"] is not None and lora_rank is None:
        raise WorkloadInvalid("--lora-targets needs --lora-rank")
    try:
        workload = TrainingWorkload(
            batch=_count("--batch", batch, 1),
            seq_len=_count("--seq-len", o["--seq-len"], 2048),
            grad_accum=_count("--grad-accum", o["--grad-accum"], 1),
            precision=(o["--precision"] or Precision.amp_bf16).value,
            optimizer=(o["--optimizer"] or Optimizer.adamw).value,
            recompute=(o["--recompute"] or Recompute.none).value,
            attention=(o["--attention"] or Attention.sdpa).value,
            zero=zero,
            fsdp=None if o["--fsdp"] is None else o["--fsdp"].value,
            dp=_count("--dp", o["--dp"], 1),
            tp=_count("--tp", o["--tp"], 1),
            pp=_count("--pp", o["--pp"], 1),
            virtual_stages=_count("--virtual-stages", o.get("--virtual-stages"), 1),
            cp=_count("--cp", o.get("--cp"), 1),
            ep=_count("--ep", o.get("--ep"), 1),
            sequence_parallel=bool(o["--sequence-parallel"]),
            lora_rank=lora_rank,
            lora_targets=targets,
            qlora=catalog.formats.get(QLORA_FORMAT) if o["--qlora"] else None,
            profile=catalog.profiles.get(profile),
        )
    except ValidationError as error:
        raise WorkloadInvalid(validation_message(error)) from None
    return estimate_training(model, gpu, workload, requested_gpu=requested_gpu, system=system, nodes=nodes)
