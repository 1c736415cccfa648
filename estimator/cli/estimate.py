"""The `estimate` command: parse its options, build the workload, estimate, render.

`inference_report` does everything but the rendering, so `monitor --expect` gets a Report from the same options
without running the command.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from estimator.catalog.registry import validation_message
from estimator.cli.options import (
    ForceOption,
    GroupSizeOption,
    Logits,
    LogitsOption,
    OutputFormat,
    OutputOption,
    PlotOption,
    SpecsDir,
    Units,
    UnitsOption,
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
from estimator.training.options import (
    Attention,
    Fsdp,
    Mode,
    Optimizer,
    Precision,
    Recompute,
    reject_training_options,
)
from estimator.units import parse_bytes

if TYPE_CHECKING:
    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.registry import Catalog
    from estimator.catalog.specs import GpuSpec
    from estimator.training.report import TrainingReport


ESTIMATE_FORMATS = (OutputFormat.table, OutputFormat.json, OutputFormat.csv)  # inference and training alike


class MlaCache(str, Enum):
    latent = "latent"
    decompressed = "decompressed"


def estimate_command(
    model: Annotated[str, typer.Option("--model", "-m", help="Catalog name (llama-3.1-8b), config.json path or "
                                       "folder, or a size such as 70b.")],
    gpu: Annotated[str | None, typer.Option("--gpu", "-g", help="Catalog name or alias (h100, a100, rtx-4090); "
                                            "or give --system.")] = None,
    dtype: Annotated[str | None, typer.Option(help="Weight format: fp32 fp16 bf16 fp8 int8 int4, or a quantization "
                                              "format (gptq-int4, awq-int4, nf4, q4_k_m...). Default: the "
                                              "checkpoint's quantization_config, else bf16.")] = None,
    kv_dtype: Annotated[str | None, typer.Option(help="KV-cache format: fp32 fp16 bf16 fp8 int8. Default: the "
                                                 "activation precision (bf16, or fp32 for fp32 models).")] = None,
    batch: Annotated[str, typer.Option(help="Concurrent sequences.")] = "1",
    prompt_tokens: Annotated[str, typer.Option(help="Prompt length per sequence (2048, 8k, 32Ki).")] = "2048",
    output_tokens: Annotated[str, typer.Option(help="Generated tokens per sequence, their KV cached too (default "
                                               "0: the prompt alone; plan and sweep default to 256).")] = "0",
    gpus: Annotated[str, typer.Option(help="Tensor-parallel degree: GPUs that split the model.")] = "1",
    gpu_memory: Annotated[str | None, typer.Option(help="Usable memory per GPU with its unit (96GiB, 100GB), instead "
                                                   "of the catalog's: a Mac whose wired limit was raised, a card "
                                                   "shared with other work.")] = None,
    system: Annotated[str | None, typer.Option(help="Server the GPUs sit in (hgx-h100, gb200-nvl72, pcie-l40s; "
                                               "`estimator systems`). Default: the GPU's common server.")] = None,
    nodes: Annotated[str | None, typer.Option(help="Servers of --system (1).")] = None,
    gpus_per_node: Annotated[str | None, typer.Option(help="GPUs per server, overriding the system's.")] = None,
    network: Annotated[str | None, typer.Option(help="Scale-out network per server, overriding the system's: "
                                                "NICS x Gbit/s[-ib|roce|eth], e.g. 8x400g-ib.")] = None,
    logits: LogitsOption = Logits.last,
    profile: Annotated[str, typer.Option(help="Efficiency profile: optimized (serving engine, CUDA graphs), hf "
                                         "(Hugging Face transformers eager) or megatron (training, kernel by "
                                         "kernel).")] = "optimized",
    mla_cache: Annotated[MlaCache | None, typer.Option(help="MLA models: cache the compressed latent (serving "
                                                       "engines; the optimized profile's default) or decompressed "
                                                       "K/V (transformers; the hf profile's).")] = None,
    group_size: GroupSizeOption = None,
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="table, json or csv.")]
    = OutputFormat.table,
    units: UnitsOption = Units.gb,
    explain: Annotated[bool, typer.Option("--explain", help="Print the arithmetic and assumptions.")] = False,
    specs_dir: SpecsDir = None,
    # Training (--mode train): see docs/training.md. Left unset, each takes the default in its help.
    mode: Annotated[Mode, typer.Option(help="infer, or train (one optimizer step; --batch is the micro-batch).")]
    = Mode.infer,
    seq_len: Annotated[str | None, typer.Option(help="Train: tokens per sequence (default 2048).")] = None,
    grad_accum: Annotated[str | None, typer.Option(help="Train: micro-batches per optimizer step (1).")] = None,
    precision: Annotated[Precision | None, typer.Option(help="Train: amp = fp32 weights + 16-bit autocast "
                                                        "(default amp-bf16).")] = None,
    optimizer: Annotated[Optimizer | None, typer.Option(help="Train: optimizer (adamw = PyTorch foreach).")] = None,
    recompute: Annotated[Recompute | None, typer.Option(help="Train: activation recomputation (none).")] = None,
    attention: Annotated[Attention | None, typer.Option(help="Train: attention kernel (sdpa).")] = None,
    zero: Annotated[str | None, typer.Option(help="Train: DeepSpeed ZeRO stage 0-3 over --dp ranks (0).")] = None,
    fsdp: Annotated[Fsdp | None, typer.Option(help="Train: PyTorch FSDP sharding over --dp ranks.")] = None,
    dp: Annotated[str | None, typer.Option(help="Train: data-parallel ranks (1).")] = None,
    tp: Annotated[str | None, typer.Option(help="Train: tensor-parallel ranks (1).")] = None,
    pp: Annotated[str | None, typer.Option(help="Train: pipeline stages, 1F1B (1).")] = None,
    virtual_stages: Annotated[str | None, typer.Option(help="Train: model chunks per pipeline GPU, the "
                                                       "interleaved 1F1B schedule (1).")] = None,
    sequence_parallel: Annotated[bool, typer.Option("--sequence-parallel", help="Train: split norms and "
                                                    "dropout along the sequence over --tp.")] = False,
    lora_rank: Annotated[str | None, typer.Option(help="Train: LoRA rank (frozen base, adapters trained).")] = None,
    lora_targets: Annotated[str | None, typer.Option(help="Train: 'all' or e.g. q,k,v,o,gate,up,down (all).")]
    = None,
    qlora: Annotated[bool, typer.Option("--qlora", help="Train: 4-bit NF4 base (needs --lora-rank).")] = False,
    output: OutputOption = None,
    plot: PlotOption = None,
    force: ForceOption = False,
    calibration: Annotated[Path | None, typer.Option(help="Calibration file from `estimator calibrate` (default: "
                                                     "the user config dir's, when it has this card).")] = None,
) -> None:
    """Estimate memory and speed of a model on a GPU, or a tensor-parallel group of them.

    \b
    Examples:
      estimator estimate --model llama-3.1-8b --gpu h100 --batch 8 --prompt-tokens 8k --output-tokens 512
      estimator estimate --model 70b --dtype fp16 --gpu a100 --gpus 2 --explain
      estimator estimate --model llama-3.2-1b --gpu rtx-4090 --mode train --batch 4 --format json -o train.json
    """
    params = dict(locals())  # every option by parameter name, as `estimate_params` gives them
    check_format(output_format, ESTIMATE_FORMATS)
    catalog = catalog_for(specs_dir)
    report = estimate_report(catalog, catalog.model(model), params)
    if not isinstance(report, Report):
        from estimator.cli.train import show_training

        show_training(report, output_format=output_format.value, binary=units is Units.gib, explain=explain,
                      output=output)
        return
    if plot is not None:
        from estimator.render.plot import estimate_chart  # matplotlib loads only when asked

        estimate_chart(report, plot)
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
                               options=training, system=chosen if p["system"] is not None else None,
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
                            network=p.get("network"))


def inference_report(catalog: Catalog, model_spec: ModelSpec, gpu: str | None, *, requested_gpu: str,
                     dtype: str | None, kv_dtype: str | None, batch: str, prompt_tokens: str, output_tokens: str,
                     gpus: str, logits: str, profile: str, mla_cache: str | None, group_size: int | None,
                     calibration: Path | None, system: str | None = None, nodes: str | None = None,
                     gpus_per_node: str | None = None, gpu_memory: str | None = None,
                     network: str | None = None) -> Report:
    """The Report for `estimate`'s inference options, given as typed on the command line."""
    tp = positive("--gpus", gpus)
    gpu_spec, system_spec, node_count, assumed = hardware(catalog, gpu, system, nodes, gpus_per_node, tp,
                                                          network=network)
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
                    nodes=node_count, system_assumed=assumed, gpu_alone=system is None)


TRAINING_FLAGS = ("--seq-len", "--grad-accum", "--precision", "--optimizer", "--recompute", "--attention", "--zero",
                  "--fsdp", "--dp", "--tp", "--pp", "--virtual-stages", "--sequence-parallel", "--lora-rank",
                  "--lora-targets", "--qlora")


def estimate_params(args: Sequence[str]) -> dict[str, Any]:
    """``estimate ARGS`` parsed by the estimate command's own option definitions: parameter name → value."""
    alone = typer.Typer(add_completion=False)
    alone.command()(estimate_command)
    with typer.main.get_command(alone).make_context("estimate", list(args)) as ctx:
        return dict(ctx.params)


def _value(x: Any) -> Any:
    return getattr(x, "value", x)


def report_for_params(p: dict[str, Any]) -> Report | TrainingReport:
    """The Report (or, with ``mode`` train, the TrainingReport) that `estimate` prints for parameters ``p``."""
    catalog = catalog_for(None if p["specs_dir"] is None else Path(p["specs_dir"]))
    return estimate_report(catalog, catalog.model(p["model"]), p)


def with_gpu_memory(gpu: GpuSpec, text: str | None) -> GpuSpec:
    """The card with ``--gpu-memory`` as its usable capacity, when given."""
    return gpu if text is None else gpu.with_memory(parse_bytes(text))


def report_for_args(args: Sequence[str]) -> Report:
    """The inference Report that ``estimate ARGS`` would print, parsed by the same option definitions."""
    p = estimate_params(args)
    if str(_value(p["mode"])) != Mode.infer.value:
        raise WorkloadInvalid("--expect takes inference options of estimate, not --mode train")
    report = report_for_params(p)
    assert isinstance(report, Report)
    return report


def estimate_main() -> None:
    """`estimate` console script: the estimate command on its own, importing none of the other commands (the live
    GPU's NVML bindings, planning, numpy), so its cold start pays only for what it runs."""
    from estimator.cli.run import run

    alone = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    alone.command()(estimate_command)
    run(typer.main.get_command(alone))
