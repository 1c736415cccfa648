"""TrainingReport → table (rich), JSON, or CSV. Renderers format; they never compute."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from estimator.render.formats import render_notes
from estimator.training.report import TrainingReport
from estimator.units import format_bytes, format_flops, format_seconds


def render_training_table(report: TrainingReport, console: Console, *, binary: bool = False,
                          explain: bool = False) -> None:
    """Where every byte of one GPU goes during a training step, and how long the step takes."""
    m, g, w, mem = report.model, report.gpu, report.workload, report.memory
    unit = "GiB (2³⁰ B)" if binary else "GB (10⁹ B)"

    def b(n: int) -> str:
        return format_bytes(n, binary=binary)

    layout = f"dp {w.dp} × tp {w.tp} × pp {w.pp} = {w.gpus} GPU" + ("s" if w.gpus > 1 else "")
    shard = f"FSDP {w.fsdp}" if w.fsdp else f"ZeRO-{w.zero}"
    lora = "" if w.lora_rank is None else f", LoRA r{w.lora_rank}" + (f" on {w.qlora} base" if w.qlora else "")
    console.print(f"[bold]Model[/]  {escape(m.name)}: {m.params:,} params, {m.architecture}, {m.layers} layers")
    asked = f"  (from '{escape(g.requested_as)}')" if g.requested_as != g.name else ""
    console.print(f"[bold]GPU[/]    {escape(g.name)}" + asked
                  + f": {b(g.memory_bytes)}, {format_flops(g.peak_flop_per_s)} {g.compute_dtype}; {layout}")
    console.print(f"[bold]Train[/]  micro-batch {w.batch} × {w.seq_len:,} tokens × accum {w.grad_accum}, "
                  f"{w.precision}, {w.optimizer}, recompute {w.recompute}, {w.attention}, {shard}{lora}, "
                  f"profile {w.profile}", highlight=False)

    table = Table(title=f"Memory per GPU ({unit}), peak in {mem.peak_phase}", title_justify="left")
    table.add_column("term")
    table.add_column("per GPU", justify="right")
    rows = [
        ("weights", mem.weights_bytes), ("gradients", mem.gradient_bytes),
        ("fp32 master weights", mem.master_weights_bytes), ("optimizer states", mem.optimizer_bytes),
        ("  model states", mem.model_states_bytes), ("autocast 16-bit weight copies", mem.autocast_copy_bytes),
        ("gathered parameters (ZeRO-3/FSDP)", mem.gathered_params_bytes),
        ("DDP gradient buckets", mem.ddp_bucket_bytes),
        (f"activations ({mem.in_flight_micro_batches} micro-batch in flight)", mem.activation_bytes),
        ("  of which output layer + loss", mem.output_layer_bytes),
        ("loss gradients at backward start", mem.loss_backward_bytes),
        ("one layer recomputed", mem.recompute_bytes), ("optimizer step temporaries", mem.optimizer_step_bytes),
        ("peak of tensors", mem.peak_tensor_bytes), ("runtime overhead", mem.overhead_bytes),
    ]
    for name, value in rows:
        if value or name in ("weights", "activations"):
            table.add_row(name, b(value))
    table.add_row("[bold]total per GPU[/]", f"[bold]{b(mem.per_gpu_bytes)}[/]")
    table.add_row("capacity", b(mem.capacity_bytes))
    verdict = "[green]fits[/]" if mem.fits else "[red]does not fit[/]"
    table.add_row("headroom", f"{b(mem.headroom_bytes)}  {verdict}")
    console.print(table)

    console.print(_step_table(report))
    tensors = [f"{part.name}: {part.bytes_per_token:,.0f} B/token = {b(part.bytes)}" for part in mem.layer_tensors]
    render_notes(console, report.warnings, [("Arithmetic", report.explain, "  "),
                                            ("Saved tensors per layer", tensors, "  "),
                                            ("Assumptions", report.assumptions, "  - ")] if explain else [],
                 binary=binary)


def _step_table(report: TrainingReport) -> Table:
    """The step time, split by term (on a system: the bubble and each parallelism's traffic too)."""
    t = report.time
    times = Table(title="Step time", title_justify="left")
    times.add_column("term")
    times.add_column("value", justify="right")
    times.add_row("step (expected)", format_seconds(t.step_s))
    times.add_row("  compute", format_seconds(t.compute_s))
    split = report.gpu.system is not None  # on a system: the bubble and each parallelism's traffic
    if split:
        times.add_row("    of which pipeline bubble", format_seconds(t.bubble_s))
    times.add_row("  optimizer step", format_seconds(t.optimizer_s))
    times.add_row("  communication", format_seconds(t.communication_s))
    if split:
        times.add_row("    tensor parallel", format_seconds(t.tp_communication_s))
        times.add_row("    pipeline parallel", format_seconds(t.pp_communication_s))
        times.add_row("    data parallel", format_seconds(t.dp_communication_s))
    times.add_row("step bound (peak FLOP/s)", format_seconds(t.step_bound_s))
    times.add_row("tokens/s (all GPUs)", f"{t.tokens_per_s:,.0f}")
    times.add_row("MFU", f"{t.mfu:.1%}")
    return times
