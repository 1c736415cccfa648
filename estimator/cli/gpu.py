"""Commands for the live GPU: gpu, monitor, calibrate, validate. Registered on the app in `estimator.cli.main`.

NVML is read through `estimator.live.probe` (``make_probe`` is replaced by a fake in tests); torch work lives in
`estimator.live.measure`, imported only when a command needs it, so ``import estimator`` stays light.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from estimator.catalog.files import MAX_CONFIG_BYTES, read_json
from estimator.catalog.registry import Catalog
from estimator.cli.options import ForceOption, OutputFormat, catalog_for, check_format, count
from estimator.cli.options import console as table_console
from estimator.errors import DeviceUnavailable, WorkloadInvalid
from estimator.inference.report import Report
from estimator.live.probe import (
    GpuProbe,
    NvmlProbe,
    Snapshot,
    gpu_report,
    match_catalog,
)
from estimator.render.formats import write_report
from estimator.render.live_tables import (
    mib_text,
    monitor_table,
    optional_text,
    render_calibration,
    render_gpu,
    render_validation,
)
from estimator.render.output import append_lines, check_rows_target
from estimator.request.choices import Mode
from estimator.units import MIB, format_bytes

if TYPE_CHECKING:


    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.specs import GpuSpec


LIVE_FORMATS = (OutputFormat.table, OutputFormat.json)  # gpu and validate


class LogitsChoice(str, Enum):
    """validate --logits: the last position, all, or both measured."""

    last, all, both = "last", "all", "both"


class TrainDtype(str, Enum):
    """validate's training dtype: automatic mixed precision, or bf16 weights."""

    amp, bf16 = "amp", "bf16"


def make_probe() -> GpuProbe:
    """The probe commands use; tests replace it with a `FakeProbe`."""
    return NvmlProbe()


def _read() -> Snapshot:
    probe = make_probe()
    try:
        return probe.read()
    finally:
        probe.close()


def gpu_command(
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="table or json.")]
    = OutputFormat.table,
    specs_dir: Annotated[Path | None, typer.Option("--specs-dir", help="Another specs folder.")] = None,
) -> None:
    """Every visible GPU through NVML, matched to the catalog.

    \b
    Examples:
      estimator gpu
      estimator gpu --format json
    """
    check_format(output_format, LIVE_FORMATS)
    snapshot = _read()
    catalog = catalog_for(specs_dir)
    if output_format is OutputFormat.json:
        write_report("json", gpu_report(snapshot, catalog))
        return
    console = table_console()
    for gpu in snapshot.gpus:
        render_gpu(gpu, snapshot, catalog, console)


# monitor ----------------------------------------------------------------------------------------------------

def expected_report(options: str, snapshot: Snapshot, catalog: Catalog) -> Report:
    """The estimate for ``--expect`` options (those of `estimate`); --gpu defaults to the live card's match."""
    from estimator.cli.estimate import report_for_args

    args = shlex.split(options)
    if "--gpu" not in args and "-g" not in args:
        spec = match_catalog(snapshot.gpus[0], catalog)
        if spec is None:
            raise WorkloadInvalid(f"{snapshot.gpus[0].name} is not in the catalog: give --gpu inside --expect")
        args += ["--gpu", spec.name]
    return report_for_args(args)


def monitor_lines(snapshot: Snapshot, expected: Report | None, stamp: str) -> list[str]:
    """Plain lines of one reading (what a pipe gets): one per GPU, one per process."""
    lines = []
    for gpu in snapshot.gpus:
        line = (f"{stamp} gpu{gpu.index} used {gpu.memory_used_bytes / MIB:,.0f} MiB of "
                f"{gpu.memory_total_bytes / MIB:,.0f} MiB util {optional_text(gpu.utilization_gpu_pct, '%')} "
                f"memclk {optional_text(gpu.mem_clock_mhz, ' MHz')}")
        if expected is not None and gpu.index == 0:
            predicted = expected.memory.per_gpu_bytes
            gap = gpu.memory_used_bytes - predicted
            line += (f" expected {predicted / MIB:,.0f} MiB gap {gap / MIB:+,.0f} MiB "
                     f"({gap / predicted:+.1%})")
        lines.append(line)
        lines += [f"{stamp} gpu{gpu.index} pid {p.pid} {p.name or '?'} {mib_text(p.used_bytes)}" for p in gpu.processes]
    return lines


def monitor_command(
    interval: Annotated[float, typer.Option(help="Seconds between readings.", min=0.05)] = 1.0,
    count: Annotated[int | None, typer.Option(help="Stop after this many readings (default: until Ctrl-C).",
                                              min=1)] = None,
    expect: Annotated[str | None, typer.Option(help="Estimate options; shows the predicted total beside the "
                                               "measured one, e.g. --expect '--model llama-3.1-8b --batch 8'.")]
    = None,
    specs_dir: Annotated[Path | None, typer.Option("--specs-dir", help="Another specs folder.")] = None,
) -> None:
    """Live used memory, utilisation and memory clock, like nvidia-smi -l 1.

    \b
    Examples:
      estimator monitor --count 5
      estimator monitor --interval 2 --expect "--model llama-3.1-8b --batch 8"
    """
    from rich.live import Live

    probe = make_probe()
    console = table_console()
    try:
        snapshot = probe.read()
        expected = None if expect is None else expected_report(expect, snapshot, catalog_for(specs_dir))
        readings = 0

        def stamp() -> str:
            return datetime.now().strftime("%H:%M:%S")

        try:
            if console.is_terminal:
                with Live(monitor_table(snapshot, expected, stamp(), console.width), console=console,
                          auto_refresh=False) as live:
                    while True:
                        readings += 1
                        if count is not None and readings >= count:
                            break
                        time.sleep(interval)
                        snapshot = probe.read()
                        live.update(monitor_table(snapshot, expected, stamp(), console.width), refresh=True)
            else:
                while True:
                    for line in monitor_lines(snapshot, expected, stamp()):
                        sys.stdout.write(line + "\n")
                    sys.stdout.flush()
                    readings += 1
                    if count is not None and readings >= count:
                        break
                    time.sleep(interval)
                    snapshot = probe.read()
        except KeyboardInterrupt:
            sys.stderr.write(f"stopped after {readings} readings\n")
    finally:
        probe.close()


# calibrate --------------------------------------------------------------------------------------------------

def calibrate_command(
    out: Annotated[Path | None, typer.Option(help="Calibration file to write (default: the user config dir's "
                                             "estimator/calibration.yaml, which estimate reads).")] = None,
    specs_dir: Annotated[Path | None, typer.Option("--specs-dir", help="Another specs folder.")] = None,
    force: ForceOption = False,  # replaces this card's entry (or a file that is no calibration file), keeps others
) -> None:
    """Measure this GPU (bandwidth, FLOP/s, overheads, graph cost) and write a calibration file.

    \b
    Examples:
      estimator calibrate
      estimator calibrate --out h200.yaml
      estimator calibrate --force             (measure again: replaces this card's entry)
    """
    from estimator.live import measure
    from estimator.live.calibration import (
        GpuCalibration,
        check_calibration_target,
        derive_overrides,
        save_calibration,
        user_calibration_path,
    )
    from estimator.render.output import check_target

    if out is not None:
        check_target(out, force=True)  # a folder, a missing folder, a read-only one: refused before measuring
    measure.require_torch()
    snapshot = _read()
    gpu = snapshot.gpus[0]
    path = out if out is not None else user_calibration_path()
    check_calibration_target(path, gpu.name, force=force)  # before minutes of measuring, not after
    spec = match_catalog(gpu, catalog_for(specs_dir))
    raw = measure.calibrate()
    overrides = derive_overrides(raw, spec, gpu.memory_total_bytes)
    entry = GpuCalibration(
        gpu=gpu.name, catalog_gpu=None if spec is None else spec.name,
        measured_at=datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        software={"torch": str(raw.get("torch")), "cuda": str(raw.get("cuda_runtime")),
                  "driver": snapshot.driver_version or "?"},
        memory_total_bytes=gpu.memory_total_bytes,
        copy_bytes_per_s=raw["copy_bytes_per_s"], read_bytes_per_s=raw["read_bytes_per_s"],
        gemv_bytes_per_s=raw["gemv_bytes_per_s"], matmul_flop_per_s=raw["matmul_flop_per_s"],
        driver_reserved_bytes=raw["driver_reserved_bytes"], cuda_context_bytes=raw["cuda_context_bytes"],
        workspace_bytes=raw["workspace_bytes"], graph_kernel_s=raw["graph_kernel_s"],
        graph_layer_s=raw["graph_layer_s"], graph_bandwidth_bytes_per_s=raw["graph_bandwidth_bytes_per_s"],
        host_bare_op_s=raw.get("host_bare_op_s"), host_per_op_s=raw.get("host_per_op_s"),
        profile_overrides=overrides,
    )
    save_calibration(path, entry, force=force)
    console = table_console()
    render_calibration(console, entry, str(path))
    if spec is None:
        console.print(f"{gpu.name} is not in the catalog: efficiency fractions were not derived", highlight=False)


# validate ---------------------------------------------------------------------------------------------------

def _rows_target(ctx: typer.Context, path: Path | None) -> Path | None:
    """``--save``'s callback: the file is checked before minutes of measuring, not after (``--force`` is eager)."""
    if path is not None:
        check_rows_target(path, force=bool(ctx.params.get("force")))
    return path


def validate_command(
    model: Annotated[str, typer.Option("--model", "-m", help="Catalog model name, or a config.json path or "
                                       "folder.")],
    batch: Annotated[str, typer.Option(help="Sequences.")] = "1",
    prompt_tokens: Annotated[str, typer.Option(help="Prompt (infer) or sequence (train) length (2048, 8k).")]
    = "2048",
    mode: Annotated[Mode, typer.Option(help="infer or train.")] = Mode.infer,
    logits: Annotated[LogitsChoice, typer.Option(help="Prefill logits: last, all or both.")] = LogitsChoice.both,
    lean: Annotated[bool, typer.Option(help="Also time a lean CUDA-graph decode (optimized profile).")] = True,
    train_dtype: Annotated[TrainDtype, typer.Option(help="amp (fp32 weights, bf16 autocast) or bf16.")]
    = TrainDtype.amp,
    checkpointing: Annotated[bool, typer.Option(help="Gradient checkpointing (train).")] = False,
    gpu: Annotated[str | None, typer.Option(help="Catalog card for predictions (default: the live match).")]
    = None,
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="table or json.")]
    = OutputFormat.table,
    save: Annotated[Path | None, typer.Option(
        callback=_rows_target, help="Append the measured rows (JSON lines) to this file; one that holds no rows "
                                    "is refused unless --force, which replaces it.")] = None,
    force: ForceOption = False,
    specs_dir: Annotated[Path | None, typer.Option("--specs-dir", help="Another specs folder.")] = None,
) -> None:
    """Run the model on this GPU (random weights) and compare with the estimate.

    \b
    Examples:
      estimator validate --model llama-3.1-8b --batch 1 --prompt-tokens 2048
      estimator validate --model llama-3.2-1b --batch 8 --prompt-tokens 8k --format json
      estimator validate --model llama-3.2-1b --mode train --batch 4
    """
    from estimator.live import measure
    from estimator.live.validation import Predictor, ValidateReport, points

    check_format(output_format, LIVE_FORMATS)
    sequences, tokens = count("batch", batch), count("prompt_tokens", prompt_tokens)
    catalog = catalog_for(specs_dir)
    spec_model, config = _model_and_config(catalog, model)
    if spec_model.arch is None:
        raise WorkloadInvalid(f"{model} has no architecture to build")
    measure.require_torch()
    measure.require_cuda()
    measure.require_transformers()
    gpu_spec = _validation_gpu(catalog, gpu)
    rows = _measured_rows(spec_model.name, config, mode=mode, batch=sequences, tokens=tokens, logits=logits,
                          lean=lean, train_dtype=train_dtype, checkpointing=checkpointing)
    if save is not None:
        append_lines(save, [json.dumps(row) + "\n" for row in rows], replace=force)
    pts = list(points(rows, Predictor.default(catalog, gpu_spec, spec_model)))
    if output_format is OutputFormat.json:
        write_report("json", ValidateReport(model=spec_model.name, gpu=gpu_spec.name, rows=tuple(rows),
                                            points=tuple(p.record() for p in pts)))
        return
    console = table_console()
    render_validation(console, f"{spec_model.name} on {gpu_spec.name}", pts)
    if mode is Mode.train:
        row = rows[0]
        console.print(f"train {train_dtype.value} b{sequences} s{tokens} checkpointing={checkpointing}: steady "
                      f"peak {format_bytes(row['steady_peak'], binary=True)}, first step peak "
                      f"{format_bytes(row['first_step_peak'], binary=True)}, step {row['latency']['median_s']:.3f} s",
                      highlight=False)
    for row in (r for r in rows if r.get("error")):
        console.print(f"failed: {row.get('phase', row['kind'])} {row['error']}", highlight=False)


def _measured_rows(name: str, config: dict[str, Any], *, mode: Mode, batch: int, tokens: int, logits: LogitsChoice,
                   lean: bool, train_dtype: TrainDtype, checkpointing: bool) -> list[dict[str, Any]]:
    """One training step's measurement, or the prefill, decode (and lean decode) measurements of inference."""
    from estimator.live import measure

    if mode is Mode.train:
        row = measure.measure_train(config, mode=train_dtype.value, batch=batch, seq=tokens,
                                    checkpointing=checkpointing)
        return [{**row, "model": name}]
    keeps = {"last": (1,), "all": (0,), "both": (1, 0)}[logits.value]
    return measure.inference_rows(name, config, prefill=[(batch, tokens)], decode=[(batch, tokens)],
                                  lean=[(batch, tokens)] if lean else [], logits=keeps)


def _validation_gpu(catalog: Catalog, gpu: str | None) -> GpuSpec:
    """The catalog card the predictions use: ``--gpu``, or the live card's catalog match."""
    if gpu is not None:
        return catalog.gpus.get(gpu)
    live = _read().gpus[0]
    found = match_catalog(live, catalog)
    if found is None:
        raise DeviceUnavailable(f"{live.name} is not in the catalog: give --gpu for the predictions")
    return found


def _model_and_config(catalog: Catalog, text: str) -> tuple[ModelSpec, dict[str, Any]]:
    """The model to build and its config.json: a catalog name's YAML ``config:``, or a local config.json (a path
    ending in .json, or a folder holding config.json) read as the estimate reads it."""
    try:
        path = Path(text).expanduser()
        local = path.suffix == ".json" or path.is_dir()
    except (OSError, RuntimeError, ValueError):  # too long for a path, ~nosuchuser, a NUL byte: a name, as estimate
        path, local = Path(), False  # reads it (catalog.registry._local_path)
    if local:
        spec = catalog.model(text)  # validates the file: a bad one is one line
        file = path / "config.json" if path.is_dir() else path
        return spec, dict(read_json(file, MAX_CONFIG_BYTES, "config.json"))
    spec = catalog.models.get(text)
    return spec, _catalog_config(catalog, spec.name)


def _catalog_config(catalog: Catalog, name: str) -> dict[str, Any]:
    """The published config.json of a catalog model (its YAML's ``config:`` mapping)."""
    from estimator.catalog.files import read_yaml
    from estimator.catalog.registry import layered_files

    for path in layered_files((catalog.root, *catalog.layers), "models"):
        data = read_yaml(path, "model spec")
        if isinstance(data, dict) and data.get("name", path.stem) == name:
            return dict(data["config"])
    raise WorkloadInvalid(f"{name} has no config in the catalog folder")  # pragma: no cover


