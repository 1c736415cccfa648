"""The `estimate` command's work, given its options as parsed: build the workload, estimate, render.

No typer here: the command's typer definition (`estimate.py`) and the console script's fast path
(`estimate_fast.py`) both parse the options and call `run_estimate`. `estimate_report` does everything but the
rendering, so `monitor --expect`, `oom` and `estimator serve` get a Report from the same options.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from estimator.catalog.registry import validation_message
from estimator.cli.shared import (
    MlaCache,
    OutputFormat,
    Units,
    catalog_for,
    check_format,
    hardware,
    kv_format,
    positive,
    print_table,
    weights_format,
)
from estimator.errors import WorkloadInvalid
from estimator.inference.estimate import estimate
from estimator.inference.report import Report
from estimator.inference.workload import InferenceWorkload
from estimator.live.calibration import calibrated_profile
from estimator.render.formats import render_table, write_report
from estimator.training.options import Mode, reject_training_options
from estimator.units import parse_bytes

if TYPE_CHECKING:
    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.registry import Catalog
    from estimator.catalog.specs import GpuSpec
    from estimator.training.report import TrainingReport


ESTIMATE_FORMATS = (OutputFormat.table, OutputFormat.json, OutputFormat.csv)  # inference and training alike
__all__ = ["ESTIMATE_FORMATS", "TRAINING_FLAGS", "MlaCache", "estimate_report", "inference_report", "report_for_params",
           "run_estimate", "with_gpu_memory"]


def run_estimate(params: dict[str, Any]) -> None:
    """The estimate command for its options ``params`` (parameter name → value, as the command's option
    definitions convert them): estimate, then print or write the report."""
    p = params
    output_format, units, explain, output = p["output_format"], p["units"], p["explain"], p["output"]
    check_format(output_format, ESTIMATE_FORMATS)
    catalog = catalog_for(p["specs_dir"])
    report = estimate_report(catalog, catalog.model(p["model"]), p)
    if not isinstance(report, Report):
        from estimator.cli.train import show_training

        show_training(report, output_format=output_format.value, binary=units is Units.gib, explain=explain,
                      output=output)
        return
    if p["plot"] is not None:
        from estimator.render.plot import estimate_chart  # matplotlib loads only when asked

        estimate_chart(report, p["plot"])
    if output_format is OutputFormat.table:
        print_table(output, lambda out: render_table(report, out, binary=units is Units.gib, explain=explain))
    else:
        write_report(output_format.value, report, output)


def estimate_report(catalog: Catalog, model_spec: ModelSpec, p: dict[str, Any]) -> Report | TrainingReport:
    """The Report (or, with ``mode`` train, the TrainingReport) that `estimate` prints for its parameters ``p``
    (parameter name → value, as typed): the one conversion of its options into a workload, which the command,
    `oom` and `estimator serve` share."""
    training = {flag: p[flag.lstrip("-").replace("-", "_")] for flag in TRAINING_FLAGS}
    if str(_value(p["mode"])) == Mode.train.value:
        from estimator.cli.train import INFERENCE_ONLY, reject_inference_options, training_report

        reject_inference_options({flag: p[flag.lstrip("-").replace("-", "_")] for flag in INFERENCE_ONLY})
        if p["system"] is None and (p["nodes"] is not None or p["gpus_per_node"] is not None):
            raise WorkloadInvalid("--nodes and --gpus-per-node with --mode train need --system")
        # training uses a server only when named: a GPU alone keeps the card's listed link for every group
        card, chosen, node_count, _ = hardware(catalog, p["gpu"], p["system"], p["nodes"], p["gpus_per_node"], 1,
                                               network=p.get("network"))
        return training_report(catalog, model_spec, with_gpu_memory(card, p["gpu_memory"]),
                               requested_gpu=p["gpu"] or "", batch=p["batch"], profile=p["profile"],
                               options={**training, "--ep": p.get("ep")},
                               system=chosen if p["system"] is not None else None,
                               nodes=node_count)
    reject_training_options(training)
    calibration = None if p["calibration"] is None else Path(p["calibration"])
    return inference_report(catalog, model_spec, p["gpu"], requested_gpu=p["gpu"] or "",
                            dtype=p["dtype"], kv_dtype=p["kv_dtype"], batch=p["batch"],
                            prompt_tokens=p["prompt_tokens"], output_tokens=p["output_tokens"], gpus=p["gpus"],
                            logits=str(_value(p["logits"])), profile=p["profile"],
                            mla_cache=None if p["mla_cache"] is None else str(_value(p["mla_cache"])),
                            group_size=p["group_size"], calibration=calibration, system=p["system"],
                            nodes=p["nodes"], gpus_per_node=p["gpus_per_node"], gpu_memory=p["gpu_memory"],
                            network=p.get("network"), ep=p.get("ep"))


def inference_report(catalog: Catalog, model_spec: ModelSpec, gpu: str | None, *, requested_gpu: str,
                     dtype: str | None, kv_dtype: str | None, batch: str, prompt_tokens: str, output_tokens: str,
                     gpus: str, logits: str, profile: str, mla_cache: str | None, group_size: int | None,
                     calibration: Path | None, system: str | None = None, nodes: str | None = None,
                     gpus_per_node: str | None = None, gpu_memory: str | None = None,
                     network: str | None = None, ep: str | None = None) -> Report:
    """The Report for `estimate`'s inference options, given as typed on the command line."""
    tp = positive("--gpus", gpus)
    experts = 1 if ep is None else positive("--ep", ep)
    gpu_spec, system_spec, node_count, assumed = hardware(catalog, gpu, system, nodes, gpus_per_node,
                                                          max(tp, experts), network=network)
    gpu_spec = with_gpu_memory(gpu_spec, gpu_memory)
    weight_format = weights_format(catalog, model_spec, dtype, group_size)
    kv = kv_format(catalog, weight_format, kv_dtype)
    chosen_profile = calibrated_profile(catalog.profiles.get(profile), gpu_spec, calibration)
    try:
        workload = InferenceWorkload(
            batch=positive("--batch", batch),
            prompt_tokens=positive("--prompt-tokens", prompt_tokens),
            output_tokens=positive("--output-tokens", output_tokens, allow_zero=True),
            weight_format=weight_format,
            kv_format=kv,
            tensor_parallel=tp,
            logits=logits,
            mla_cache=mla_cache,
            profile=chosen_profile,
        )
    except ValidationError as error:
        raise WorkloadInvalid(validation_message(error)) from None
    return estimate(model_spec, gpu_spec, workload, requested_gpu=requested_gpu, system=system_spec,
                    nodes=node_count, system_assumed=assumed, gpu_alone=system is None, ep=experts)


TRAINING_FLAGS = ("--seq-len", "--grad-accum", "--precision", "--optimizer", "--recompute", "--attention", "--zero",
                  "--fsdp", "--dp", "--tp", "--pp", "--cp", "--virtual-stages", "--sequence-parallel", "--lora-rank",
                  "--lora-targets", "--qlora")


def _value(x: Any) -> Any:
    return getattr(x, "value", x)


def report_for_params(p: dict[str, Any]) -> Report | TrainingReport:
    """The Report (or, with ``mode`` train, the TrainingReport) that `estimate` prints for parameters ``p``."""
    catalog = catalog_for(None if p["specs_dir"] is None else Path(p["specs_dir"]))
    return estimate_report(catalog, catalog.model(p["model"]), p)


def with_gpu_memory(gpu: GpuSpec, text: str | None) -> GpuSpec:
    """The card with ``--gpu-memory`` as its usable capacity, when given."""
    return gpu if text is None else gpu.with_memory(parse_bytes(text))
