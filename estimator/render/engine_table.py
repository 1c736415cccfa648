"""The ``--engine`` block of the estimate table: the figures the engine prints at start-up, whether it starts, and
its command line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.units import GIB

if TYPE_CHECKING:
    from rich.console import Console

    from estimator.inference.engine_vllm import VllmStartup


def _gib(n: int) -> str:
    return f"{n / GIB:.2f} GiB"


def render_engine(console: Console, s: VllmStartup | None) -> None:
    """vLLM's start-up on one GPU, in the words and GiB (2³⁰ B) its log uses, then the ``vllm serve`` line;
    nothing without ``--engine``."""
    if s is None:
        return
    from rich.markup import escape

    console.print(f"[bold]vLLM start-up[/] (v{s.version} policy, per GPU, GiB as vLLM logs them)")
    lines = [
        f"memory it may use      {_gib(s.requested_memory_bytes)} = {s.gpu_memory_utilization:g} x "
        f"{_gib(s.total_memory_bytes)}",
        f"model weights          {_gib(s.weights_bytes)}",
        f"activation peak        {_gib(s.activation_peak_bytes)} ({s.max_num_batched_tokens:,}-token profile run, "
        f"{s.max_num_seqs:,} sequences)",
        f"non-torch memory       {_gib(s.non_torch_bytes)}",
        f"CUDA graphs            {_gib(s.cuda_graph_bytes)}"
        + (" (--enforce-eager)" if s.enforce_eager else " (captured after sizing the KV cache: outside it)"),
        f"KV cache               {_gib(max(s.kv_cache_bytes, 0))}: {s.kv_blocks:,} blocks of {s.block_size} tokens",
        f"KV tokens              {s.kv_tokens:,}",
        f"max concurrency        {s.max_concurrency:.2f}x at {s.max_model_len:,} tokens per request",
    ]
    for line in lines:
        console.print("  " + line, highlight=False, markup=False)
    if s.starts:
        console.print("  starts                 [green]yes[/]", highlight=False)
    else:
        console.print("  starts                 [red]no[/]: " + escape(s.reason or ""), highlight=False)
        console.print("  fix                    " + escape(s.fix or ""), highlight=False)
    console.print("  " + escape(s.command), highlight=False, soft_wrap=True)
