"""The `estimate` command's typer definition: its options, parsed by typer, run by `run_estimate`.

The options are this function's parameters; `estimate_fast.py` parses the same options without typer for the
console script (its option table is tested against these definitions), and the work both call is in
`estimate_run.py` (re-exported here: `oom`, `gpu --expect` and `estimator serve` import it from here).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from estimator.cli.estimate_run import (
    ESTIMATE_FORMATS,
    TRAINING_FLAGS,
    MlaCache,
    estimate_report,
    inference_report,
    report_for_params,
    run_estimate,
    with_gpu_memory,
)
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
)
from estimator.errors import WorkloadInvalid
from estimator.inference.report import Report
from estimator.training.options import Attention, Fsdp, Mode, Optimizer, Precision, Recompute

__all__ = ["ESTIMATE_FORMATS", "TRAINING_FLAGS", "MlaCache", "estimate_command", "estimate_main", "estimate_params",
           "estimate_report", "inference_report", "report_for_args", "report_for_params", "run_estimate",
           "with_gpu_memory"]


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
    ep: Annotated[str | None, typer.Option(help="MoE models: expert-parallel GPUs, each holding whole experts; a "
                                           "multiple of --gpus, whose groups each serve a share of the batch "
                                           "(data-parallel attention) and exchange tokens by all-to-all.")] = None,
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
                                         "(Hugging Face transformers eager), hf-graph (transformers, decode step "
                                         "in a CUDA graph) or megatron (training, kernel by kernel).")] = "optimized",
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
    precision: Annotated[Precision | None, typer.Option(help="Train: amp = fp32 weights + 16-bit autocast, "
                                                        "fp8 = Transformer Engine FP8 GEMMs (default amp-bf16).")
                         ] = None,
    optimizer: Annotated[Optimizer | None, typer.Option(help="Train: optimizer (adamw = PyTorch foreach).")] = None,
    recompute: Annotated[Recompute | None, typer.Option(help="Train: activation recomputation (none).")] = None,
    attention: Annotated[Attention | None, typer.Option(help="Train: attention kernel (sdpa).")] = None,
    zero: Annotated[str | None, typer.Option(help="Train: DeepSpeed ZeRO stage 0-3 over --dp ranks (0).")] = None,
    fsdp: Annotated[Fsdp | None, typer.Option(help="Train: PyTorch FSDP sharding over --dp ranks.")] = None,
    dp: Annotated[str | None, typer.Option(help="Train: data-parallel ranks (1).")] = None,
    tp: Annotated[str | None, typer.Option(help="Train: tensor-parallel ranks (1).")] = None,
    pp: Annotated[str | None, typer.Option(help="Train: pipeline stages, 1F1B (1).")] = None,
    cp: Annotated[str | None, typer.Option(help="Train: context-parallel ranks, the sequence split over them, "
                                           "ring attention (1).")] = None,
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
    run_estimate(dict(locals()))  # every option by parameter name, as `estimate_params` gives them


def estimate_params(args: Sequence[str]) -> dict[str, Any]:
    """``estimate ARGS`` parsed by the estimate command's own option definitions: parameter name → value."""
    alone = typer.Typer(add_completion=False)
    alone.command()(estimate_command)
    with typer.main.get_command(alone).make_context("estimate", list(args)) as ctx:
        return dict(ctx.params)


def report_for_args(args: Sequence[str]) -> Report:
    """The inference Report that ``estimate ARGS`` would print, parsed by the same option definitions."""
    p = estimate_params(args)
    if str(getattr(p["mode"], "value", p["mode"])) != Mode.infer.value:
        raise WorkloadInvalid("--expect takes inference options of estimate, not --mode train")
    report = report_for_params(p)
    assert isinstance(report, Report)
    return report


def estimate_main() -> None:
    """The estimate command on its own, parsed by typer (the console script's fast path, `estimate_fast`, falls
    back to this for what it does not parse itself: --help, a usage error), importing none of the other commands
    (the live GPU's NVML bindings, planning, numpy)."""
    from estimator.cli.run import run

    alone = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    alone.command()(estimate_command)
    run(typer.main.get_command(alone))
