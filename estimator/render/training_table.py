"""TrainingReport → table (rich), JSON, or CSV. Renderers format; they never compute."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markup import escape

from estimator.render.fit import Column, print_table
from estimator.render.formats import card_memory, render_fixes, render_notes
from estimator.training.report import TrainingReport
from estimator.units import capacity_label, format_bytes, format_flops, format_seconds


def render_training_table(report: TrainingReport, console: Console, *, binary: bool = False,
                          explain: bool = False) -> None:
    """Where every byte of one GPU goes during a training step, and how long the step takes."""
    m, g, w, mem = report.model, report.gpu, report.workload, report.memory
    unit = "GiB (2³⁰ B)" if binary else "GB (10⁹ B)"

    def b(n: int) -> str:
        return format_bytes(n, binary=binary)

    split = w.pipeline_layers
    uneven = f" ({split[0]} + {split[1]} × {len(split) - 2} + {split[-1]} layers)" if len(set(split)) > 1 else ""
    layout = (f"dp {w.dp} × tp {w.tp} × pp {w.pp}{uneven} = {w.gpus} GPU" + ("s" if w.gpus > 1 else "")
              + (f", experts over ep {w.ep} of the dp ranks" if w.ep > 1 else ""))
    shard = f"FSDP {w.fsdp}" if w.fsdp else f"ZeRO-{w.zero}"
    lora = "" if w.lora_rank is None else f", LoRA r{w.lora_rank}" + (f" on {w.qlora} base" if w.qlora else "")
    console.print(f"[bold]Model[/]  {escape(m.name)}: {m.params:,} params, {m.architecture}, {m.layers} layers")
    asked = f"  (from '{escape(g.requested_as)}')" if g.requested_as != g.name else ""
    console.print(f"[bold]GPU[/]    {escape(g.name)}" + asked
                  + f": {card_memory(g)}, {format_flops(g.peak_flop_per_s)} {g.compute_dtype}; {layout}")
    console.print(f"[bold]Train[/]  micro-batch {w.batch} × {w.seq_len:,} tokens × accum {w.grad_accum}, "
                  f"{w.precision}, {w.optimizer}, recompute {w.recompute}, {w.attention}, {shard}{lora}, "
                  f"profile {w.profile}", highlight=False)

    _memory_table(report, console, b, unit, binary)
    _step_table(report, console)
    tensors = [f"{part.name}: {part.bytes_per_token:,.0f} B/token = {b(part.bytes)}" for part in mem.layer_tensors]
    render_notes(console, report.warnings, [("Arithmetic", report.explain, "  "),
                                            ("Saved tensors per layer", tensors, "  "),
                                            ("Assumptions", report.assumptions, "  - ")] if explain else [],
                 binary=binary)
    render_fixes(console, report.fixes, binary=binary)


# Each phase's terms (TrainingMemoryReport fields), in the order the table lists them.
_LABELS = {
    "weights_bytes": "weights", "gradient_bytes": "gradients", "master_weights_bytes": "fp32 master weights",
    "optimizer_bytes": "optimizer states", "ddp_bucket_bytes": "DDP gradient buckets",
    "autocast_copy_bytes": "autocast 16-bit weight copies",
    "fp8_weight_bytes": "FP8 weight copies (Transformer Engine)",
    "gathered_params_bytes": "gathered parameters (ZeRO-3/FSDP)", "activation_bytes": "activations",
    "loss_backward_bytes": "loss gradients at backward start", "loss_forward_bytes": "logits at the loss (forward end)",
    "recompute_bytes": "one layer recomputed",
    "optimizer_step_bytes": "optimizer step temporaries",
}


def _memory_table(report: TrainingReport, console: Console, b: Callable[[int], str], unit: str,
                  binary: bool) -> None:
    """One column per phase of the step: the terms it holds, summed to its tensors; the largest sets the peak.
    Model states (weights, gradients, master weights, optimizer states) are named in the caption."""
    mem = report.memory
    held = [{t.term: t.bytes for t in phase.terms} for phase in mem.phases]
    rows: list[list[str]] = []
    labels = {**_LABELS, "activation_bytes": f"activations ({mem.in_flight_micro_batches} micro-batch in flight)"}
    for term, label in labels.items():
        if any(term in h for h in held):
            rows.append([label, *(b(h[term]) if term in h else "" for h in held)])
        if term == "activation_bytes" and mem.output_layer_bytes:
            rows.append(["  of which output layer + loss",
                         *(f"({b(mem.output_layer_bytes)})" if h.get(term) == mem.activation_bytes else ""
                           for h in held)])
    rows.append(["tensors", *(b(phase.tensor_bytes) for phase in mem.phases)])
    peak = [p.phase == mem.peak_phase for p in mem.phases]
    verdict = "[green]fits[/]" if mem.fits else "[red]does not fit[/]"
    tail = [("runtime overhead", b(mem.overhead_bytes)), ("[bold]total per GPU[/]", f"[bold]{b(mem.per_gpu_bytes)}[/]"),
            (capacity_label(mem.capacity_bytes, binary=binary), b(mem.capacity_bytes)),
            ("headroom", f"{b(mem.headroom_bytes)}  {verdict}"),
            ("max micro-batch (this seq len)", f"{mem.max_batch:,}"),
            ("longest sequence (this batch)", f"{mem.max_seq_len:,} tok")]
    if mem.max_seq_len_by_memory != mem.max_seq_len:  # capped at the model's own limit
        tail.append(("  memory alone (past its limit)", f"{mem.max_seq_len_by_memory:,} tok"))
    for label, value in tail:
        rows.append([label, *(value if at_peak else "" for at_peak in peak)])
    columns = [Column("term", wrap=True), *(Column(phase.phase, "right") for phase in mem.phases)]
    print_table(console, columns, rows, title=f"Memory per GPU ({unit}), peak in {mem.peak_phase}",
                title_justify="left", caption_justify="left",
                caption=f"Each column sums to the tensors its phase of the step holds; the largest "
                        f"({mem.peak_phase}) sets the peak. Model states (weights, gradients, master weights, "
                        f"optimizer states): {b(mem.model_states_bytes)}.")


def _step_table(report: TrainingReport, console: Console) -> None:
    """The step time, split by term (on a system: the bubble and each parallelism's traffic too)."""
    t = report.time
    rows = [["step (expected)", format_seconds(t.step_s)], ["  compute", format_seconds(t.compute_s)]]
    split = report.gpu.system is not None  # on a system: the bubble and each parallelism's traffic
    if split:
        rows.append(["    of which pipeline bubble", format_seconds(t.bubble_s)])
    rows.append(["  optimizer step", format_seconds(t.optimizer_s)])
    rows.append(["  communication", format_seconds(t.communication_s)])
    if split:
        rows.append(["    tensor parallel", format_seconds(t.tp_communication_s)])
        rows.append(["    pipeline parallel", format_seconds(t.pp_communication_s)])
        rows.append(["    data parallel", format_seconds(t.dp_communication_s)])
        if report.workload.cp > 1:
            rows.append(["    context parallel", format_seconds(t.cp_communication_s)])
        if report.workload.ep > 1:
            rows.append(["    expert parallel (all-to-all)", format_seconds(t.ep_communication_s)])
    if t.exposed_communication_s != t.communication_s:  # the profile runs some of it behind compute
        rows.append(["    of which the step waits for", format_seconds(t.exposed_communication_s)])
    rows.append(["step bound (peak FLOP/s)", format_seconds(t.step_bound_s)])
    rows.append(["tokens/s (all GPUs)", f"{t.tokens_per_s:,.0f}"])
    rows.append(["MFU", f"{t.mfu:.1%}"])
    print_table(console, [Column("term", wrap=True), Column("value", "right")], rows, title_justify="left",
                title="Step time (hypothetical: does not fit)" if t.hypothetical else "Step time")
