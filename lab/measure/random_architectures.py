"""Measure randomly generated architectures on the live GPU in one run and stream the rows as JSON lines.

    python -m lab.measure.random_architectures --out DIR [--seed 0] [--budget-s 500] [--inference 20] [--train 20]
    python -m lab.measure.random_architectures --out DIR --seed 2 --host 30   # small models: host issue vs GPU time
    python -m lab.measure.random_architectures --out DIR --seed 7 --lean 24   # lean decodes only, five batch × contexts
    python -m lab.measure.random_architectures --out DIR --seed 9 --inference 24 --train 0 --prefill-only
    python -m lab.measure.random_architectures --out /tmp/x --tiny        # the same code paths on the CPU, toy sizes

The architectures are drawn from ``--seed`` (Python's ``random``): llama / qwen2 / mistral / gemma2 / gpt2-like
families, random widths, head counts, grouped-query ratios and explicit head_dim, depths that fit the card. Each
row carries the config.json it was built from (``config``), so `lab/accuracy/report.py` predicts it
without a catalog entry, and its ``split``: ``fit`` (mechanisms may be derived from it) or ``held-out`` (judged
only), drawn per architecture from the same seed.

Rows (formats of tests/data/measured/reference/h200-measured.jsonl, plus ``config``, ``dtype`` and ``split``):
``kind=device`` (torch and transformers versions), ``kind=sdpa_probe`` (which SDPA kernel PyTorch picks per dtype,
head_dim and grouped-query ratio, and what one call allocates), ``kind=model`` (load; prefill in fp32, fp16 or
bf16 with SDPA as transformers picks it; HF eager decode and the same decode captured in a CUDA graph, with the
aten operations one step dispatches), ``kind=lean_decode`` and ``kind=train`` (AdamW steps, amp / bf16 / fp32,
checkpointing on and off, the optimizer step timed on its own); with ``--host``, ``kind=train_parts`` (forward,
backward and optimizer step, each with its host issue time and GPU time) and ``kind=host_inference`` (prefill and
eager decode, the same two times) of small models, every one ``fit``. Each case is guarded; a failure is a row with
``error``. No new architecture starts once ``--budget-s`` has passed. Every row also carries the host's speed
just before and after its case (``host_op_before_s``, ``host_op_after_s``: `host_probe`), and prefill and HF decode
rows the host issue time beside the GPU time of one forward (``issue``: the medians of 5 with every repeat, the
host's speed probed just before them, ``host_op_s``, and the kernels' busy time by kind from torch.profiler,
``kernel_s``, ``gemm_kernel_s``, ``attention_kernel_s``, ``other_kernel_s``, ``kernels``).
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator.live import device, measure
from estimator.live.host_cost import count_ops
from lab.measure.dispatch_timing import host_and_gpu, host_probe, kernel_times, step_extra, timed, timed_reps

FAMILIES = ("llama", "qwen2", "mistral", "gemma2", "gpt2")
TRAIN_FAMILIES = FAMILIES[:4]  # gpt2 trains too, but its 1,024-wide family is covered by inference
# --train-families may add these: q/k norms (qwen3), and four norms a layer with q/k norms and Gemma's fp32 scaling
# (gemma3_text), for the training count's norms (docs/accuracy.md)
MORE_TRAIN_FAMILIES = ("qwen3", "gemma3_text")
DTYPES = ("fp32", "fp16", "bf16")
TRAIN_MODES = ("amp", "bf16", "fp32")


# Architectures ---------------------------------------------------------------------------------------------

def _heads(rng: random.Random, hidden: int, family: str) -> tuple[int, int, int]:
    """(query heads, KV heads, head_dim): head_dim explicit where the family allows it."""
    if family == "gpt2":
        head_dim = rng.choice([d for d in (64, 64, 80, 96, 128) if hidden % d == 0])
        return hidden // head_dim, hidden // head_dim, head_dim
    gemma = family in ("gemma2", "gemma3_text")
    head_dim = 256 if gemma and rng.random() < 0.5 else rng.choice((64, 80, 96, 128, 128, 160))
    # transformers checks hidden % heads == 0 even where head_dim is explicit (LlamaConfig, 5.x)
    near = [n for n in range(2, hidden // 32 + 1) if hidden % n == 0 and 0.7 <= n * head_dim / hidden <= 1.3]
    heads = rng.choice(near) if near else hidden // 64
    ratios = [r for r in (1, 2, 4, 7, 8, heads) if heads % r == 0]
    kv = heads // rng.choice(ratios)
    return heads, kv, head_dim


def random_config(rng: random.Random, family: str, hidden: int, layers: int) -> dict[str, Any]:
    """A config.json of ``family`` at ``hidden`` width and ``layers`` depth, the rest drawn from ``rng``."""
    heads, kv, head_dim = _heads(rng, hidden, family)
    ffn = 256 * round(hidden * rng.uniform(2.5, 4.0) / 256)
    if family == "gpt2":
        return {"model_type": "gpt2", "n_embd": hidden, "n_head": heads, "n_layer": layers,
                "n_inner": ffn if rng.random() < 0.5 else None, "n_positions": 4096, "vocab_size": 50257}
    config: dict[str, Any] = {
        "model_type": family, "hidden_size": hidden, "intermediate_size": ffn, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": head_dim,
        "vocab_size": rng.choice((32000, 49152, 128256, 151936)), "max_position_embeddings": 16384,
        "tie_word_embeddings": rng.random() < 0.3, "rms_norm_eps": 1e-5,
    }
    if family == "mistral":
        config["sliding_window"] = None
    if family in ("qwen2", "qwen3"):
        config["use_sliding_window"] = False
    if family == "gemma3_text":
        config.update(vocab_size=262144, sliding_window=rng.choice((512, 1024, 4096)), query_pre_attn_scalar=head_dim,
                      tie_word_embeddings=True, hidden_activation="gelu_pytorch_tanh")
    if family == "gemma2":
        config.update(vocab_size=256000, sliding_window=4096, query_pre_attn_scalar=head_dim,
                      final_logit_softcapping=30.0, attn_logit_softcapping=None, tie_word_embeddings=True,
                      hidden_activation="gelu_pytorch_tanh")
    return config


def inference_archs(rng: random.Random, count: int, only: str | None = None) -> list[dict[str, Any]]:
    """Small to mid-size models (0.05–4 B at full depth): the host-bound and fp32 cases (``only``:
    every one in that dtype, the draws otherwise the same)."""
    out = []
    for index in range(count):
        family = FAMILIES[index % len(FAMILIES)]
        hidden = 128 * rng.randint(4, 24)
        layers = rng.randint(4, 28)
        drawn = DTYPES[index % 3] if index % 2 == 0 else rng.choice(DTYPES)
        dtype = only or drawn
        out.append({"name": f"rand-i{index:02d}", "config": random_config(rng, family, hidden, layers),
                    "dtype": dtype, "split": "fit" if rng.random() < 0.5 else "held-out"})
    return out


def train_archs(rng: random.Random, count: int, families: tuple[str, ...] = TRAIN_FAMILIES) -> list[dict[str, Any]]:
    """Widths of 0.1–14 B models; deep ones cut to the layers that fit an H200 with their mode's states."""
    out = []
    for index in range(count):
        family = families[index % len(families)]
        hidden = 128 * round(rng.choice((640, 1024, 1536, 2048, 3072, 4096, 5120)) * rng.uniform(0.85, 1.15) / 128)
        mode = TRAIN_MODES[index % 3]
        full_layers = max(4, round(hidden / 128 * rng.uniform(0.6, 1.2)))
        per_param = {"amp": 16, "bf16": 8, "fp32": 16}[mode]
        config = random_config(rng, family, hidden, 1)
        layer_params = 4 * hidden * hidden + 3 * hidden * config.get("intermediate_size", 4 * hidden)
        fits = int(60e9 / per_param / layer_params)  # ~60 GB of weights, gradients and states, the rest activations
        config["num_hidden_layers"] = max(2, min(full_layers, fits))
        batch, seq = rng.choice(((1, 2048), (2, 1024), (4, 512), (2, 2048), (8, 256), (1, 4096)))
        out.append({"name": f"rand-t{index:02d}", "config": config, "mode": mode, "batch": batch, "seq": seq,
                    "checkpointing": rng.random() < 0.4, "split": "fit" if rng.random() < 0.5 else "held-out"})
    return out


def train_families(text: str) -> tuple[str, ...]:
    """--train-families: comma-separated names of TRAIN_FAMILIES and MORE_TRAIN_FAMILIES."""
    families = tuple(text.split(","))
    unknown = set(families) - set(TRAIN_FAMILIES + MORE_TRAIN_FAMILIES)
    if unknown:
        raise argparse.ArgumentTypeError(f"not a training family: {', '.join(sorted(unknown))}")
    return families


def tiny_config(config: dict[str, Any]) -> dict[str, Any]:
    """The same family at toy size, for a CPU dry run."""
    small = dict(config)
    if small["model_type"] == "gpt2":
        small.update(n_embd=64, n_head=4, n_layer=2, n_inner=None, vocab_size=512)
        return small
    small.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2 if config["num_key_value_heads"] < config["num_attention_heads"] else 4,
                 head_dim=16, vocab_size=512)
    return small


# Measurements ----------------------------------------------------------------------------------------------

def sdpa_probe() -> list[dict[str, Any]]:
    """Which kernel PyTorch's SDPA runs for each dtype, head_dim and grouped-query ratio (``enable_gqa``, no mask,
    causal, as transformers calls it), found by allowing one backend at a time, and the bytes one call allocates
    beyond its inputs and output (8 query heads, 4,096 tokens)."""
    t = measure.require_cuda()
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}
    tokens = 64 if device._cpu() else 4096
    for dtype_name in DTYPES:
        dtype = {"fp32": t.float32, "fp16": t.float16, "bf16": t.bfloat16}[dtype_name]
        for head_dim in (64, 80, 96, 128, 160, 256):
            for kv in (8, 2):
                q = t.randn(1, 8, tokens, head_dim, device=device._device(), dtype=dtype)
                k = t.randn(1, kv, tokens, head_dim, device=device._device(), dtype=dtype)
                runs = []
                for name, backend in backends.items():
                    try:
                        with sdpa_kernel([backend]):
                            F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=kv != 8)
                        runs.append(name)
                    except RuntimeError:
                        pass
                device.free_memory()
                before = device.allocated()
                device.reset_peak()
                out = F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=kv != 8)
                device.sync()
                extra = device.peak_allocated() - before - out.numel() * out.element_size()
                rows.append({"kind": "sdpa_probe", "dtype": dtype_name, "head_dim": head_dim, "heads": 8,
                             "kv_heads": kv, "tokens": tokens, "backends_that_run": runs,
                             "call_bytes_beyond_output": extra})
                del q, k, out
    return rows


def hf_decode_rows(model: Any, batch: int, context: int) -> dict[str, Any]:
    """HF decode at ``context`` of a StaticCache: eager (measure.measure_hf_decode), then the same step captured
    in a CUDA graph (what `generate` with a static cache and a compiled graph removes: the host), and its op count."""
    transformers = measure.require_transformers()
    t = measure.require_cuda()
    row = measure.measure_hf_decode(model, batch, context)
    cache = transformers.StaticCache(config=model.config, max_cache_len=context + 8)
    ids = t.randint(0, model.config.vocab_size, (batch, 1), device=device._device())
    position = t.tensor([context], device=device._device())

    def step() -> Any:
        return model(input_ids=ids, past_key_values=cache, cache_position=position, use_cache=True,
                     position_ids=position.expand(batch, 1))

    with t.inference_mode():
        step()
        row["decode_ops"] = count_ops(step)
        probe = host_probe()
        row["issue"] = {**timed_reps(step, 5), "host_op_s": probe, **kernel_times(step)}
        try:
            row["graph"] = device.graph_time(step, reps=20)
        except Exception as error:
            row["graph_error"] = f"{type(error).__name__}: {str(error)[:200]}"
    device.free_memory()
    return row


def _prefill_cases(rng: random.Random, tiny: bool) -> list[tuple[int, int]]:
    if tiny:
        return [(1, 32)]
    return [(1, rng.choice((128, 512, 1024))), (1, rng.choice((2048, 4096))), (rng.choice((2, 4, 8)), 2048)]


def prefill_ops(model: Any, batch: int, prompt: int) -> int:
    """aten operations one prefill forward (no cache, last logits) dispatches."""
    t = measure.require_cuda()
    ids = t.randint(0, model.config.vocab_size, (batch, prompt), device=device._device())
    with t.inference_mode():
        return count_ops(lambda: model(input_ids=ids, use_cache=False, logits_to_keep=1))


def prefill_issue(model: Any, batch: int, prompt: int, reps: int = 5) -> dict[str, Any]:
    """Host issue time beside GPU time of one prefill forward (no cache, last logits): the medians of ``reps``
    (every repeat kept, the host's speed probed just before them), and where the profiler runs, what the GPU's
    kernels took (`kernel_times`): the busy time beside the wall time, which the host's gaps make longer."""
    t = measure.require_cuda()
    ids = t.randint(0, model.config.vocab_size, (batch, prompt), device=device._device())
    forward = functools.partial(model, input_ids=ids, use_cache=False, logits_to_keep=1)
    with t.inference_mode():
        probe = host_probe()
        return {**timed_reps(forward, reps), "host_op_s": probe, **kernel_times(forward)}


def _prefills(run: Run, model: Any, base: dict[str, Any], rng: random.Random) -> None:
    for index, (batch, prompt) in enumerate(_prefill_cases(rng, run.tiny)):
        for keep in (1, 0) if index == 1 else (1,):
            try:
                row = measure.measure_prefill(model, batch, prompt, keep, latency=keep == 1)
                if keep == 1:
                    row["issue"] = prefill_issue(model, batch, prompt)
                if index == 0:
                    row["prefill_ops"] = prefill_ops(model, batch, prompt)
                run.emit({**base, **row})
            except Exception as error:
                run.emit({**base, "phase": "prefill", "batch": batch, "prompt": prompt, "logits_to_keep": keep,
                          "error": measure._why(error)})


def measure_inference(run: Run, arch: dict[str, Any], rng: random.Random) -> None:
    """Load in the architecture's dtype, prefill (logits last, and all positions once), HF eager and graph
    decode, lean decode (bf16 dense families)."""
    config = tiny_config(arch["config"]) if run.tiny else arch["config"]
    base = {"kind": "model", "model": arch["name"], "dtype": arch["dtype"], "split": arch["split"],
            "config": arch["config"]}
    try:
        model, load = measure.measure_load(config, arch["dtype"])
    except Exception as error:
        run.emit({**base, "phase": "load", "error": measure._why(error)})
        return
    run.emit({**base, **load})
    if not run.args.decode_only:
        _prefills(run, model, base, rng)
    if run.args.prefill_only:
        del model
        measure.free_memory()
        return
    decode = [(2, 24)] if run.tiny else [(1, rng.choice((512, 2048))), (rng.choice((8, 16, 32)), 1024)]
    for batch, context in decode:
        try:
            run.emit({**base, **hf_decode_rows(model, batch, context)})
        except Exception as error:
            run.emit({**base, "phase": "decode", "batch": batch, "context": context, "error": measure._why(error)})
    del model
    measure.free_memory()
    if arch["dtype"] == "bf16" and measure.lean_supported(config) is None:
        lean_rows(run, arch, config, arch["split"], [(1, 2048), (16, 4096)])


def lean_rows(run: Run, arch: dict[str, Any], config: dict[str, Any], split: str,
              shapes: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> None:
    """The lean graph decode of ``config`` at each (batch, context) of ``shapes`` (a toy one on a dry run), each
    guarded: a failure is a row with ``error``."""
    for batch, context in [(2, 24)] if run.tiny else shapes:
        try:
            run.emit({**measure.lean_decode(config, batch, context, attention="flash"), "model": arch["name"],
                      "split": split, "config": arch["config"]})
        except Exception as error:
            run.emit({"kind": "lean_decode", "model": arch["name"], "batch": batch, "context": context,
                      "error": measure._why(error)})


LEAN_SHAPES = ((1, 2048), (4, 8192), (16, 4096), (32, 2048), (64, 1024))  # (batch, context) of `--lean`


def lean_set(run: Run, rng: random.Random, count: int) -> None:
    """``count`` bf16 architectures of the lean families, each decoded lean at every `LEAN_SHAPES` point."""
    for index in range(count):
        family = FAMILIES[index % 4]  # gpt2 has no lean decoder
        arch = {"name": f"rand-l{index:02d}",
                "config": random_config(rng, family, 128 * rng.randint(4, 24), rng.randint(4, 28))}
        if not run.in_budget(arch["name"]):
            return
        lean_rows(run, arch, tiny_config(arch["config"]) if run.tiny else arch["config"], "held-out", LEAN_SHAPES)


def measure_training(run: Run, arch: dict[str, Any]) -> None:
    config = tiny_config(arch["config"]) if run.tiny else arch["config"]
    seq = 32 if run.tiny else arch["seq"]
    base = {"kind": "train", "model": arch["name"], "split": arch["split"], "config": arch["config"]}
    try:
        row = measure.measure_train(config, mode=arch["mode"], batch=arch["batch"], seq=seq,
                                    checkpointing=arch["checkpointing"], extra=step_extra)
        run.emit({**row, **base})
    except Exception as error:
        run.emit({**base, "mode": arch["mode"], "batch": arch["batch"], "seq": seq,
                  "checkpointing": arch["checkpointing"], "error": measure._why(error)})


def host_train_row(config: dict[str, Any], mode: str, batch: int, seq: int, ckpt: bool) -> dict[str, Any]:
    """One steady AdamW step split into forward, backward and optimizer step, each with its host issue time and
    GPU time (median of 3 after 2 warm-up steps), and the aten operations of one forward."""
    t = measure.require_cuda()
    measure.free_memory()
    model = measure.build_model(measure.hf_config(config), t.bfloat16 if mode == "bf16" else t.float32)
    model.train()
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    optimizer = t.optim.AdamW(model.parameters(), lr=1e-5)
    ids = t.randint(0, model.config.vocab_size, (batch, seq), device=device._device())
    held: dict[str, Any] = {}

    def forward() -> None:
        with t.autocast(device._device(), dtype=t.bfloat16, enabled=mode == "amp"):
            held["loss"] = model(input_ids=ids, labels=ids, use_cache=False).loss

    def backward() -> None:
        held.pop("loss").backward()

    parts: dict[str, list[tuple[float, float]]] = {"forward": [], "backward": [], "optimizer": []}
    for rep in range(5):
        optimizer.zero_grad(set_to_none=True)
        for name, fn in (("forward", forward), ("backward", backward), ("optimizer", optimizer.step)):
            timing = host_and_gpu(fn)
            if rep >= 2:
                parts[name].append(timing)
    optimizer.zero_grad(set_to_none=True)
    ops = count_ops(forward)
    held.clear()
    row = {"kind": "train_parts", "mode": mode, "batch": batch, "seq": seq, "checkpointing": ckpt,
           "params": sum(p.numel() for p in model.parameters()), "param_tensors": sum(1 for _ in model.parameters()),
           "forward_ops": ops}
    for name, values in parts.items():
        row[f"{name}_host_s"] = sorted(v[0] for v in values)[1]
        row[f"{name}_gpu_s"] = sorted(v[1] for v in values)[1]
    return row  # the model goes with this frame; the next case's free_memory() returns its blocks


def host_set(run: Run, rng: random.Random, count: int) -> None:
    """Small models (the host-bound regime): prefill and eager decode host issue time beside GPU time, and
    training steps split into their parts."""
    for index in range(count):
        family = FAMILIES[index % 4]
        config = random_config(rng, family, 128 * rng.randint(4, 16), rng.randint(2, 24))
        config = tiny_config(config) if run.tiny else config
        name = f"rand-h{index:02d}"
        if not run.in_budget(name):
            return
        base = {"model": name, "split": "fit", "config": config}
        mode = TRAIN_MODES[index % 3]
        batch, seq = (1, 32) if run.tiny else rng.choice(((4, 512), (2, 1024), (8, 256), (1, 2048)))
        for ckpt in (False, True):
            try:
                run.emit({**base, **host_train_row(config, mode, batch, seq, ckpt)})
            except Exception as error:
                run.emit({**base, "kind": "train_parts", "mode": mode, "checkpointing": ckpt,
                          "error": measure._why(error)})
        try:
            run.emit({**base, **host_inference_row(config, rng.choice(DTYPES), run.tiny)})
        except Exception as error:
            run.emit({**base, "kind": "host_inference", "error": measure._why(error)})


def host_inference_row(config: dict[str, Any], dtype: str, tiny: bool) -> dict[str, Any]:
    """Prefill (batch 1, 128 and 1,024 tokens) and eager StaticCache decode (batch 1): host issue and GPU time."""
    transformers = measure.require_transformers()
    t = measure.require_cuda()
    model, _ = measure.measure_load(config, dtype)
    row: dict[str, Any] = {"kind": "host_inference", "dtype": dtype}
    with t.inference_mode():
        for prompt in (16, 32) if tiny else (128, 1024):
            ids = t.randint(0, model.config.vocab_size, (1, prompt), device=device._device())
            row[f"prefill{prompt}_host_s"], row[f"prefill{prompt}_gpu_s"] = timed(
                functools.partial(model, input_ids=ids, use_cache=False, logits_to_keep=1), 3)
        position = t.tensor([512], device=device._device())
        token = t.randint(0, model.config.vocab_size, (1, 1), device=device._device())
        step = functools.partial(model, input_ids=token,
                                 past_key_values=transformers.StaticCache(config=model.config, max_cache_len=520),
                                 cache_position=position, use_cache=True, position_ids=position.expand(1, 1))
        row["decode_host_s"], row["decode_gpu_s"] = timed(step, 5)
    del model, step
    measure.free_memory()
    return row


class Run:
    """One measuring run: where rows go, the time budget, and the toy-size switch."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tiny = bool(args.tiny)
        self.start = time.monotonic()
        args.out.mkdir(parents=True, exist_ok=True)
        self.sink = (args.out / "measured.jsonl").open("a", encoding="utf-8")
        self.last_probe: float | None = None

    def emit(self, row: dict[str, Any]) -> None:
        probe = host_probe()
        row = {**row, "seed": self.args.seed, "elapsed_s": round(time.monotonic() - self.start, 1),
               "host_op_before_s": self.last_probe, "host_op_after_s": probe}
        self.last_probe = probe
        self.sink.write(json.dumps(row) + "\n")
        self.sink.flush()
        what = row.get("phase") or row["kind"]
        print(f"[{row['elapsed_s']:6.1f}s] {row.get('model', '')} {what} "
              f"{'ERROR ' + row['error'] if row.get('error') else 'ok'}", flush=True)

    def in_budget(self, what: str) -> bool:
        if time.monotonic() - self.start < self.args.budget_s:
            return True
        self.emit({"kind": "skipped", "model": what, "error": f"budget {self.args.budget_s:.0f} s spent"})
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget-s", type=float, default=500.0)
    parser.add_argument("--inference", type=int, default=20, help="how many inference architectures")
    parser.add_argument("--train", type=int, default=20, help="how many training architectures")
    parser.add_argument("--tiny", action="store_true", help="CPU dry run with toy configs")
    parser.add_argument("--host", type=int, default=0, help="instead: this many small models, host vs GPU time")
    parser.add_argument("--lean", type=int, default=0, help="instead: this many architectures, lean decode only")
    parser.add_argument("--prefill-only", action="store_true", help="inference architectures: load and prefill only")
    parser.add_argument("--decode-only", choices=DTYPES, help="inference architectures: load and decode only, all in "
                        "this dtype")
    parser.add_argument("--train-families", type=train_families, default=TRAIN_FAMILIES,
                        help=f"training families, comma-separated: {', '.join(TRAIN_FAMILIES + MORE_TRAIN_FAMILIES)}")
    args = parser.parse_args()
    run = Run(args)
    rng = random.Random(args.seed)
    for count, measure_set in ((args.lean, lean_set), (args.host, host_set)):
        if count:
            if args.tiny:
                measure.dry_run_on_cpu()
            else:
                run.emit(measure.device_facts())
            measure_set(run, rng, count)
            run.sink.close()
            return
    infer = inference_archs(rng, args.inference, args.decode_only)
    train = train_archs(rng, args.train, args.train_families)
    if args.tiny:
        measure.dry_run_on_cpu()
    else:
        run.emit(measure.device_facts())
    for row in sdpa_probe():
        run.emit(row)
    jobs: list[tuple[str, dict[str, Any]]] = []
    for index in range(max(len(infer), len(train))):  # interleaved: a spent budget leaves both kinds measured
        jobs += [("infer", a) for a in infer[index:index + 1]] + [("train", a) for a in train[index:index + 1]]
    for kind, arch in jobs:
        if not run.in_budget(arch["name"]):
            break
        if kind == "infer":
            measure_inference(run, arch, rng)
        else:
            measure_training(run, arch)
    run.sink.close()
    print(f"done in {time.monotonic() - run.start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
