"""`estimator gpus`, `models` and `systems`: list the catalogs, or show one entry with its sources."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from estimator.catalog.registry import Catalog
from estimator.cli.options import OutputFormat, SpecsDir, catalog_for, check_format, console
from estimator.model.inventory import active_param_count, param_count
from estimator.render.fit import Column, print_table
from estimator.render.formats import write_report
from estimator.request.listing import catalog_rows, table_rows
from estimator.units import GIB, format_bytes

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console


gpus_app = typer.Typer(help="The GPU catalog.\n\n\b\nExamples:\n  estimator gpus\n  estimator gpus --format csv > "
                                "gpus.csv\n  estimator gpus show rtx-4090", invoke_without_command=True)
models_app = typer.Typer(help="The model catalog.\n\n\b\nExamples:\n  estimator models\n  estimator models --format "
                              "json\n  estimator models show llama-3.1-70b",
                         invoke_without_command=True)


# How the usable capacity was found, marked in the table (GpuSpec.capacity_source).
_CAPACITY_MARK = {"reported": "", "override": "", "installed-gib": "*", "unified-share": "†", "marketed": "‡"}
_CAPACITY_NOTE = ("usable: GiB (2³⁰ B), as nvidia-smi / rocm-smi / hl-smi report it; * the installed GiB (no device "
                  "report on record); † the share of unified memory the GPU may use; ‡ the marketed GB (converted). "
                  "TFLOP/s dense.")
GPUS_FORMATS = (OutputFormat.table, OutputFormat.json, OutputFormat.csv)


# the --format option of every catalog listing (gpus, models, systems)
CatalogFormat = Annotated[OutputFormat, typer.Option("--format", "-f", help="table, json or csv.")]


Draw = Callable[[Catalog], None]


AllOption = Annotated[bool, typer.Option("--all", help="Every column (memory, bandwidth, TFLOP/s, power), not the "
                                                      "one-screen list of names and sizes.")]


def _listing(app: typer.Typer, kind: str, what: str, example: str,
             short: Draw | None = None) -> Callable[[Draw], Draw]:
    """Register ``kind``'s listing as ``app``'s callback (its help names ``what`` it lists and shows ``example``):
    JSON or CSV rows written here, a table drawn by the decorated function; nothing when a sub-command runs
    instead. With ``short``, the table is drawn by ``short`` unless ``--all`` is given (a catalog too long for one
    screen)."""
    def register(draw: Draw) -> Draw:
        def listing(ctx: typer.Context, specs_dir: Path | None, output_format: OutputFormat, everything: bool) -> None:
            if ctx.invoked_subcommand is not None:
                return
            check_format(output_format, GPUS_FORMATS)
            catalog = catalog_for(specs_dir)
            if output_format is OutputFormat.table:
                (draw if everything or short is None else short)(catalog)
                return
            rows = catalog_rows(catalog, kind)
            write_report(output_format.value, rows, table=table_rows(rows))

        def listed(ctx: typer.Context, specs_dir: SpecsDir = None,
                   output_format: CatalogFormat = OutputFormat.table) -> None:
            listing(ctx, specs_dir, output_format, everything=True)

        def listed_short(ctx: typer.Context, specs_dir: SpecsDir = None,
                         output_format: CatalogFormat = OutputFormat.table, everything: AllOption = False) -> None:
            listing(ctx, specs_dir, output_format, everything)

        chosen = listed if short is None else listed_short
        chosen.__doc__ = (f"List the {what} catalog.\n\n    \b\n    Examples:\n      estimator {kind}\n      estimator "
                          f"{kind} --format csv > {kind}.csv\n      estimator {kind} show {example}\n    ")
        app.callback()(chosen)
        return draw
    return register


def gpus_short(catalog: Catalog) -> None:
    """The gpus catalog on one screen: the cards by the memory they are sold with, each by its alias, wrapped to
    the terminal's width; ``--all`` gives the full table, ``gpus show NAME`` one card."""
    import textwrap

    out = console()
    width = max(40, min(out.width, 120))
    sizes: dict[float, list[str]] = {}
    for g in sorted(catalog.gpus, key=lambda g: (g.memory_gb, g.vendor, g.name)):
        sizes.setdefault(g.memory_gb, []).append(g.aliases[0] if g.aliases else g.name.replace(" ", "\u00a0"))
    label = max(len(f"{size:g} GB") for size in sizes) + 2 if sizes else 0
    lines = [f"{len(catalog.gpus)} cards by the memory they are sold with (usable memory: --all):"]
    for size, cards in sizes.items():
        lines += textwrap.wrap(" ".join(cards), width=width, initial_indent=f"{size:g} GB".ljust(label),
                               subsequent_indent=" " * label, break_on_hyphens=False, break_long_words=False)
    lines.append("estimator gpus --all: every column; estimator gpus show NAME: one card")
    out.print("\n".join(escape(line) for line in lines), highlight=False, soft_wrap=True)


@_listing(gpus_app, "gpus", "GPU", "rtx-4090", short=gpus_short)
def gpus_list(catalog: Catalog) -> None:
    """The gpus catalog as a table."""
    gpus = sorted(catalog.gpus, key=lambda g: (g.vendor, g.name))
    cells: list[list[str]] = []
    for g in gpus:
        flops = g.dense_tflop_per_s
        sixteen = flops.get("bf16") or flops.get("fp16")
        cells.append([escape(g.name), escape(g.aliases[0]) if g.aliases else "",
                     f"{g.memory_bytes / GIB:,.1f} GiB{_CAPACITY_MARK[g.capacity_source]}",
                     f"{g.memory_gb:g} GB", g.memory_type + (" unified" if g.unified_memory else ""),
                     f"{g.bandwidth_gb_per_s:,.0f}",
                     *(_tflops(v) for v in (sixteen, flops.get("fp8"), flops.get("fp4"))),
                     "—" if g.tdp_w is None else f"{g.tdp_w:g}"])
    columns = [Column("name", wrap=True), Column("alias"), Column("usable"), Column("marketed"),
               Column("type", wrap=True), *(Column(h) for h in ("GB/s", "16-bit", "fp8", "fp4", "W"))]
    print_table(console(), columns, cells, caption=_CAPACITY_NOTE)


def _tflops(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


_CAPACITY_WORDS = {
    "reported": "what the device reports", "installed-gib": "the installed GiB, no device report on record",
    "unified-share": "the share of the unified memory the GPU may use",
    "marketed": "the marketed GB, no device report on record", "override": "--gpu-memory",
}


@gpus_app.command("show")
def gpus_show(name: str, specs_dir: SpecsDir = None) -> None:
    """Show one card's spec with units and sources.

    \b
    Examples:
      estimator gpus show rtx-4090
      estimator gpus show "NVIDIA H100 80GB HBM3"
    """
    g = catalog_for(specs_dir).gpus.get(name)
    out = console()
    out.print(f"[bold]{escape(g.name)}[/]" + (f"  (from '{escape(name)}')" if name != g.name else ""))
    out.print(f"  aliases: {', '.join(g.aliases)}")
    out.print(f"  memory: {g.memory_gb:g} GB marketed{' unified (CPU and GPU share it)' if g.unified_memory else ''}; "
              f"usable {format_bytes(g.memory_bytes, binary=True)} ({g.memory_bytes:,} B), "
              f"{_CAPACITY_WORDS[g.capacity_source]}; {g.memory_type}")
    out.print(f"  bandwidth: {g.bus_width_bits} bit / 8 × {g.data_rate_gbps:g} Gbps = "
              f"{g.derived_bandwidth_gb_per_s:,.1f} GB/s; vendor {g.bandwidth_gb_per_s:,.0f} GB/s")
    out.print("  dense TFLOP/s: " + ", ".join(f"{k} {v:,.1f}" for k, v in g.dense_tflop_per_s.items()))
    out.print(f"  TDP {'not published' if g.tdp_w is None else f'{g.tdp_w:g} W'}; interconnect: {g.interconnect}")
    _provenance(out, g.price_usd, g.price_date, g.notes, g.sources)


@_listing(models_app, "models", "model", "mixtral-8x7b")
def models_list(catalog: Catalog) -> None:
    """The models catalog as a table."""
    models = sorted(catalog.models, key=lambda m: m.name)
    cells: list[list[str]] = []
    for m in models:
        a = m.arch
        assert a is not None
        cells.append([escape(m.name), escape(a.model_type), f"{param_count(a) / 1e9:,.2f} B",
                     f"{active_param_count(a) / 1e9:,.2f} B", str(a.num_layers), str(a.hidden_size),
                     f"{a.attention.num_heads}/{a.attention.num_kv_heads}", f"{a.max_position_embeddings or '—'}"])
    columns = [Column(h) for h in ("name", "type", "params", "active", "layers", "hidden", "heads/kv", "context")]
    print_table(console(), columns, cells)


@models_app.command("show")
def models_show(name: str, specs_dir: SpecsDir = None) -> None:
    """Show one model's architecture and parameter counts.

    \b
    Examples:
      estimator models show mixtral-8x7b
      estimator models show meta-llama/Llama-3.1-8B
    """
    m = catalog_for(specs_dir).model(name)
    out = console()
    out.print(f"[bold]{escape(m.name)}[/]")
    a = m.arch
    if a is None:
        out.print(f"  generic dense model: {m.generic_params:,} parameters, no architecture")
        return
    att = a.attention
    out.print(f"  params: {param_count(a):,} total, {active_param_count(a):,} active per token")
    out.print(f"  {a.model_type}: {a.num_layers} layers, hidden {a.hidden_size}, vocab {a.vocab_size:,}, "
                  f"tied embeddings: {a.tie_word_embeddings}")
    layout = "MLA" if att.latent else ("MQA" if att.num_kv_heads == 1 else "GQA" if att.num_kv_heads < att.num_heads
                                       else "MHA")
    out.print(f"  attention: {layout}, {att.num_heads} heads, {att.num_kv_heads} KV heads, head_dim "
                  f"{att.head_dim}" + (f", latent {att.latent.kv_lora_rank}+{att.latent.qk_rope_head_dim}"
                                        if att.latent else ""))
    windows = sorted({w for w in a.layer_windows if w is not None})
    if windows:
        local = sum(1 for w in a.layer_windows if w is not None)
        out.print(f"  sliding window {', '.join(map(str, windows))} on {local} of {a.num_layers} layers")
    out.print(f"  MLP: {'gated' if a.mlp.gated else 'plain'}, width {a.mlp.intermediate_size}")
    if a.moe:
        out.print(f"  MoE: {a.moe.num_experts} experts, top-{a.moe.experts_per_token}, expert width "
                      f"{a.moe.expert_intermediate_size}, shared width {a.moe.shared_intermediate_size}, "
                      f"{a.num_moe_layers} MoE layers" + (f", latent width {a.moe.latent_size}" if a.moe.latent_size
                                                           else ""))
    if m.hf_params:
        out.print(f"  Hugging Face transformers count: {m.hf_params:,}")
    for source in m.sources:
        out.print(f"  source: {source}", highlight=False)


systems_app = typer.Typer(help="The system (server) catalog.\n\n\b\nExamples:\n  estimator systems\n  estimator "
                               "systems show hgx-h100",
                          invoke_without_command=True)


@_listing(systems_app, "systems", "system", "hgx-h100")
def systems_list(catalog: Catalog) -> None:
    """The systems catalog as a table."""
    rows = [[escape(s.name), escape(catalog.system_gpu(s).name), str(s.gpus_per_node), escape(s.intra_node_link),
             str(s.domain_gpus), f"{s.link_gb_per_s:g}", f"{s.nics_per_node} × {s.nic_gbit_per_s:g} Gb/s",
             f"{s.server_power_w:,.0f}", "—" if s.price_usd is None else f"${s.price_usd:,.0f}"]
            for s in sorted(catalog.systems, key=lambda s: s.name)]
    columns = [Column("name"), Column("GPU", wrap=True), Column("GPUs/node"), Column("link"), Column("domain"),
               Column("GB/s/dir"), Column("network", wrap=True), Column("W"), Column("price")]
    print_table(console(), columns, rows)


@systems_app.command("show")
def systems_show(name: str, specs_dir: SpecsDir = None) -> None:
    """Show one system's spec with units and sources.

    \b
    Examples:
      estimator systems show gb200-nvl72
      estimator systems show hgx-h100
    """
    catalog = catalog_for(specs_dir)
    s = catalog.systems.get(name)
    gpu = catalog.system_gpu(s)  # before any line: a system naming an unknown GPU is one error, nothing partial
    out = console()
    out.print(f"[bold]{escape(s.name)}[/]: {escape(s.description)}", highlight=False)
    out.print(f"  GPU: {escape(gpu.name)} × {s.gpus_per_node} per node")
    out.print(f"  {s.intra_node_link} ({s.link_topology}) joins {s.domain_gpus} GPUs at {s.link_gb_per_s:g} GB/s per "
              f"GPU per direction, {s.link_latency_us:g} µs per step; PCIe {s.pcie_gb_per_s:g} GB/s between domains")
    out.print(f"  network: {s.network}, {s.nics_per_node} × {s.nic_gbit_per_s:g} Gb/s per node "
              f"({s.network_bytes_per_s_per_gpu / 1e9:g} GB/s per GPU per direction), {s.network_latency_us:g} µs")
    out.print(f"  host memory {s.host_memory_gb:,.0f} GB; server power {s.server_power_w:,.0f} W")
    _provenance(out, s.price_usd, s.price_date, s.notes, s.sources)


def _provenance(out: Console, price_usd: float | None, price_date: str | None, notes: str | None,
                sources: Sequence[str]) -> None:
    """The price with its date, the notes and every source of a spec, as plain text (never rich markup)."""
    if price_usd:
        out.print(f"  price ≈ ${price_usd:,.0f} ({price_date}, approximate)", markup=False)
    if notes:
        out.print(f"  notes: {notes}", highlight=False, markup=False)
    for source in sources:
        out.print(f"  source: {source}", highlight=False, markup=False)
