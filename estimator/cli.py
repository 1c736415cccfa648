"""Command line: parse, build a workload, call the library, render; map errors to one line and an exit code.

Two entry points share one implementation: ``estimate ...`` is ``estimator estimate ...``.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from pydantic import ValidationError

from estimator import cli_gpu, cli_plan
from estimator.calibration import calibrated_profile
from estimator.catalog import Catalog, default_catalog, validation_message
from estimator.errors import EstimatorError, WorkloadInvalid
from estimator.estimate import estimate
from estimator.inventory import active_param_count, param_count
from estimator.render import render_table, to_csv, to_json
from estimator.specs import NumberFormat
from estimator.train_options import (
    Attention,
    Fsdp,
    Mode,
    Optimizer,
    Precision,
    Recompute,
    reject_training_options,
)
from estimator.units import format_bytes, parse_count
from estimator.workload import InferenceWorkload

if TYPE_CHECKING:
    from rich.console import Console


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


class Units(str, Enum):
    gb = "gb"
    gib = "gib"


class Logits(str, Enum):
    last = "last"
    all = "all"


class MlaCache(str, Enum):
    latent = "latent"
    decompressed = "decompressed"


app = typer.Typer(
    help="Will this model fit on that GPU, how fast will it run? Estimates from datasheets and model configs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
gpus_app = typer.Typer(help="The GPU catalog. Example: estimator gpus show rtx-4090", invoke_without_command=True)
models_app = typer.Typer(help="The model catalog. Example: estimator models show llama-3.1-70b",
                         invoke_without_command=True)
app.add_typer(gpus_app, name="gpus")
app.add_typer(models_app, name="models")
app.add_typer(cli_plan.app)  # plan and sweep

SpecsDir = Annotated[Path | None, typer.Option("--specs-dir", help="Read specs from this folder instead of the "
                                                "packaged catalog (same layout as specs/).")]


def _catalog(specs_dir: Path | None) -> Catalog:
    return default_catalog() if specs_dir is None else Catalog.load(specs_dir)


def _positive(name: str, text: str, *, allow_zero: bool = False) -> int:
    value = parse_count(text)
    if value < 0 or (value == 0 and not allow_zero):
        raise WorkloadInvalid(f"{name} must be {'non-negative' if allow_zero else 'positive'}, got {text!r}")
    return value


def _format(catalog: Catalog, name: str, group_size: int | None) -> NumberFormat:
    fmt = catalog.formats.get(name)
    if group_size is not None:
        if fmt.group_size is None:
            raise WorkloadInvalid(f"--group-size applies to grouped formats (gptq-int4, awq-int4, nf4, mxfp4, "
                                  f"nvfp4), not {fmt.name}")
        fmt = fmt.with_group_size(group_size)
    return fmt


@app.command("estimate")
def estimate_command(
    model: Annotated[str, typer.Option("--model", "-m", help="Catalog name (llama-3.1-8b), config.json path or "
                                       "folder, or a size such as 70b.")],
    gpu: Annotated[str, typer.Option("--gpu", "-g", help="Catalog name or alias (h100, a100, rtx-4090).")],
    dtype: Annotated[str, typer.Option(help="Weight format: fp32 fp16 bf16 fp8 int8 int4, or a quantization "
                                       "format (gptq-int4, awq-int4, nf4, q4_k_m...).")] = "bf16",
    kv_dtype: Annotated[str | None, typer.Option(help="KV-cache format: fp32 fp16 bf16 fp8 int8. Default: the "
                                                 "activation precision (bf16, or fp32 for fp32 models).")] = None,
    batch: Annotated[str, typer.Option(help="Concurrent sequences.")] = "1",
    prompt_tokens: Annotated[str, typer.Option(help="Prompt length per sequence (2048, 8k, 32Ki).")] = "2048",
    output_tokens: Annotated[str, typer.Option(help="Generated tokens per sequence (their KV is cached too).")]
    = "0",
    gpus: Annotated[str, typer.Option(help="Tensor-parallel degree: GPUs that split the model.")] = "1",
    logits: Annotated[Logits, typer.Option(help="Compute logits for the last position only, or all positions.")]
    = Logits.last,
    profile: Annotated[str, typer.Option(help="Efficiency profile: optimized (serving engine, CUDA graphs) or hf "
                                         "(Hugging Face transformers eager).")] = "optimized",
    mla_cache: Annotated[MlaCache | None, typer.Option(help="MLA models: cache the compressed latent (serving "
                                                       "engines; the optimized profile's default) or decompressed "
                                                       "K/V (transformers; the hf profile's).")] = None,
    group_size: Annotated[int | None, typer.Option(help="Quantization group size for grouped formats.")] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="table, json or csv.")]
    = OutputFormat.table,
    units: Annotated[Units, typer.Option(help="Table units: gb (10⁹ B) or gib (2³⁰ B).")] = Units.gb,
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
    sequence_parallel: Annotated[bool, typer.Option("--sequence-parallel", help="Train: split norms and "
                                                    "dropout along the sequence over --tp.")] = False,
    lora_rank: Annotated[str | None, typer.Option(help="Train: LoRA rank (frozen base, adapters trained).")] = None,
    lora_targets: Annotated[str | None, typer.Option(help="Train: 'all' or e.g. q,k,v,o,gate,up,down (all).")]
    = None,
    qlora: Annotated[bool, typer.Option("--qlora", help="Train: 4-bit NF4 base (needs --lora-rank).")] = False,
    plot: cli_plan.PlotOption = None,
    calibration: Annotated[Path | None, typer.Option(help="Calibration file from `estimator calibrate` (default: "
                                                     "the user config dir's, when it has this card).")] = None,
) -> None:
    """Estimate memory and speed. Example: estimate --model 70b --dtype fp16 --gpu a100"""
    catalog = _catalog(specs_dir)
    model_spec = catalog.model(model)
    gpu_spec = catalog.gpus.get(gpu)
    training = {"--seq-len": seq_len, "--grad-accum": grad_accum, "--precision": precision, "--optimizer": optimizer,
                "--recompute": recompute, "--attention": attention, "--zero": zero, "--fsdp": fsdp, "--dp": dp,
                "--tp": tp, "--pp": pp, "--sequence-parallel": sequence_parallel, "--lora-rank": lora_rank,
                "--lora-targets": lora_targets, "--qlora": qlora}
    if mode is Mode.train:
        from estimator.train_cli import run_training

        run_training(catalog, model_spec, gpu_spec, requested_gpu=gpu, batch=batch, profile=profile, options=training,
                     output_format=output_format.value, binary=units is Units.gib, explain=explain)
        return
    reject_training_options(training)
    weight_format = _format(catalog, dtype, group_size)
    if kv_dtype is None:
        # The cache holds activations: it takes the compute precision (fp16 models cache fp16, quantized ones bf16).
        kv_format = catalog.formats.get(
            weight_format.compute_dtype if weight_format.compute_dtype in ("fp32", "fp16") else "bf16")
    else:
        kv_format = catalog.formats.get(kv_dtype)
        if not kv_format.kv_cache:
            raise WorkloadInvalid(f"--kv-dtype {kv_dtype} is not a KV-cache format; use fp32, fp16, bf16, fp8 or "
                                  "int8")
    chosen_profile = calibrated_profile(catalog.profiles.get(profile), gpu_spec, calibration)
    try:
        workload = InferenceWorkload(
            batch=_positive("--batch", batch),
            prompt_tokens=_positive("--prompt-tokens", prompt_tokens),
            output_tokens=_positive("--output-tokens", output_tokens, allow_zero=True),
            weight_format=weight_format,
            kv_format=kv_format,
            tensor_parallel=_positive("--gpus", gpus),
            logits=logits.value,
            mla_cache=None if mla_cache is None else mla_cache.value,
            profile=chosen_profile,
        )
    except ValidationError as error:
        raise WorkloadInvalid(validation_message(error)) from None
    report = estimate(model_spec, gpu_spec, workload, requested_gpu=gpu)
    if plot is not None:
        cli_plan.estimate_plot(report, plot)
    if output_format is OutputFormat.json:
        sys.stdout.write(to_json(report) + "\n")
    elif output_format is OutputFormat.csv:
        sys.stdout.write(to_csv([report]))
    else:
        render_table(report, _console(), binary=units is Units.gib, explain=explain)


app.command("gpu")(cli_gpu.gpu_command)
app.command("monitor")(cli_gpu.monitor_command)
app.command("calibrate")(cli_gpu.calibrate_command)
app.command("validate")(cli_gpu.validate_command)


@gpus_app.callback()
def gpus_list(ctx: typer.Context, specs_dir: SpecsDir = None) -> None:
    """List the GPU catalog."""
    if ctx.invoked_subcommand is not None:
        return
    console = _console()
    from rich.table import Table

    table = Table("name", "aliases", "memory", "type", "GB/s", "bf16/fp16 TFLOP/s", "W")
    for g in sorted(_catalog(specs_dir).gpus, key=lambda g: (g.vendor, g.name)):
        flops = g.dense_tflop_per_s.get("bf16") or g.dense_tflop_per_s.get("fp16")
        table.add_row(g.name, ", ".join(g.aliases), format_bytes(g.memory_bytes, binary=False), g.memory_type,
                      f"{g.bandwidth_gb_per_s:,.0f}", "—" if flops is None else f"{flops:,.1f}", f"{g.tdp_w:g}")
    console.print(table)


@gpus_app.command("show")
def gpus_show(name: str, specs_dir: SpecsDir = None) -> None:
    """Show one card's spec with units and sources. Example: estimator gpus show rtx-4090"""
    g = _catalog(specs_dir).gpus.get(name)
    console = _console()
    console.print(f"[bold]{g.name}[/]" + (f"  (from '{name}')" if name != g.name else ""))
    console.print(f"  aliases: {', '.join(g.aliases)}")
    console.print(f"  memory: {g.memory_gb:g} GB marketed; reports {format_bytes(g.memory_bytes, binary=True)} "
                  f"({g.memory_bytes:,} B), {g.memory_type}")
    console.print(f"  bandwidth: {g.bus_width_bits} bit / 8 × {g.data_rate_gbps:g} Gbps = "
                  f"{g.derived_bandwidth_gb_per_s:,.1f} GB/s; vendor {g.bandwidth_gb_per_s:,.0f} GB/s")
    console.print("  dense TFLOP/s: " + ", ".join(f"{k} {v:,.1f}" for k, v in g.dense_tflop_per_s.items()))
    console.print(f"  TDP {g.tdp_w:g} W; interconnect: {g.interconnect}")
    if g.price_usd:
        console.print(f"  price ≈ ${g.price_usd:,.0f} ({g.price_date}, approximate)")
    if g.notes:
        console.print(f"  notes: {g.notes}", highlight=False)
    for source in g.sources:
        console.print(f"  source: {source}", highlight=False)


@models_app.callback()
def models_list(ctx: typer.Context, specs_dir: SpecsDir = None) -> None:
    """List the model catalog."""
    if ctx.invoked_subcommand is not None:
        return
    from rich.table import Table

    table = Table("name", "type", "params", "active", "layers", "hidden", "heads/kv", "context")
    for m in sorted(_catalog(specs_dir).models, key=lambda m: m.name):
        a = m.arch
        assert a is not None
        table.add_row(m.name, a.model_type, f"{param_count(a) / 1e9:,.2f} B", f"{active_param_count(a) / 1e9:,.2f} B",
                      str(a.num_layers), str(a.hidden_size), f"{a.attention.num_heads}/{a.attention.num_kv_heads}",
                      f"{a.max_position_embeddings or '—'}")
    _console().print(table)


@models_app.command("show")
def models_show(name: str, specs_dir: SpecsDir = None) -> None:
    """Show one model's architecture and parameter counts. Example: estimator models show mixtral-8x7b"""
    m = _catalog(specs_dir).model(name)
    console = _console()
    console.print(f"[bold]{m.name}[/]")
    a = m.arch
    if a is None:
        console.print(f"  generic dense model: {m.generic_params:,} parameters, no architecture")
        return
    att = a.attention
    console.print(f"  params: {param_count(a):,} total, {active_param_count(a):,} active per token")
    console.print(f"  {a.model_type}: {a.num_layers} layers, hidden {a.hidden_size}, vocab {a.vocab_size:,}, "
                  f"tied embeddings: {a.tie_word_embeddings}")
    layout = "MLA" if att.latent else ("MQA" if att.num_kv_heads == 1 else "GQA" if att.num_kv_heads < att.num_heads
                                       else "MHA")
    console.print(f"  attention: {layout}, {att.num_heads} heads, {att.num_kv_heads} KV heads, head_dim "
                  f"{att.head_dim}" + (f", latent {att.latent.kv_lora_rank}+{att.latent.qk_rope_head_dim}"
                                        if att.latent else ""))
    windows = sorted({w for w in a.layer_windows if w is not None})
    if windows:
        local = sum(1 for w in a.layer_windows if w is not None)
        console.print(f"  sliding window {', '.join(map(str, windows))} on {local} of {a.num_layers} layers")
    console.print(f"  MLP: {'gated' if a.mlp.gated else 'plain'}, width {a.mlp.intermediate_size}")
    if a.moe:
        console.print(f"  MoE: {a.moe.num_experts} experts, top-{a.moe.experts_per_token}, expert width "
                      f"{a.moe.expert_intermediate_size}, shared width {a.moe.shared_intermediate_size}, "
                      f"{a.num_moe_layers} MoE layers")
    if m.hf_params:
        console.print(f"  Hugging Face transformers count: {m.hf_params:,}")
    for source in m.sources:
        console.print(f"  source: {source}", highlight=False)


def _console() -> Console:
    from rich.console import Console

    return Console()


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise SystemExit(code)


def run(command: Any, args: list[str] | None = None) -> None:
    """Run a (typer) click command with every error reduced to one line on stderr and a non-zero exit."""
    try:
        code = command.main(args=args, standalone_mode=False)
    except EstimatorError as error:
        _fail(str(error), error.exit_code)
    except typer.Abort:
        _fail("aborted", 130)
    except ValidationError as error:
        _fail(validation_message(error), 2)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except (OverflowError, ZeroDivisionError) as error:  # numbers beyond what the formulas can carry
        _fail(f"numbers out of range: {error}", 2)
    except Exception as error:
        # Usage errors (missing or unknown option, bad choice) are click exceptions; typer vendors click, so they
        # are recognised by their interface rather than their class.
        if hasattr(error, "format_message") and hasattr(error, "exit_code"):
            _fail(" ".join(str(error.format_message()).split()).replace("Value error, ", ""), int(error.exit_code) or 2)
        raise
    if isinstance(code, int) and code:
        raise SystemExit(code)


def main() -> None:
    """`estimator` console script."""
    run(typer.main.get_command(app))


def estimate_main() -> None:
    """`estimate` console script: the estimate command on its own. It gets a Typer app of its own, so a cold start
    does not build the other eight commands (about a third of `estimate`'s own run time)."""
    alone = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    alone.command()(estimate_command)
    run(typer.main.get_command(alone))


