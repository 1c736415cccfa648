"""Measure tensor-parallel inference on several GPUs: per-GPU memory and step times (`validate --gpus N`'s figures).

Runs a lean Megatron-style tensor-parallel Llama (column-parallel fused qkv and gate_up, row-parallel o and down
with an NCCL all-reduce after each, vocabulary-parallel embedding and LM head, replicated RMSNorm) built with
random bf16 weights from a catalog config (specs/models/<name>.yaml), a static KV cache sharded by KV heads, flash
SDPA, and CUDA-graph decode. It is what a serving engine does per GPU, without the scheduler.

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
      torchrun --nproc_per_node 2 -m lab.measure.tensor_parallel --model llama-3.1-8b --cases 1x1024,16x4096 \
      --out tp.jsonl

Writes one JSON line per case from rank 0 (per-rank memory gathered): weights/KV bytes per rank, torch peak,
NVML used per GPU, prefill and decode times (CUDA events, median after warm-up). Test it on the CPU with
`--device cpu` (gloo, no graphs, tiny config via --tiny).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
import yaml

from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)

SPECS = Path(__file__).resolve().parents[2] / "specs" / "models"


def nvml_used(device_index: int) -> int | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
        return int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
    except Exception:
        return None


class TPLlama:
    """Weights and KV cache of one tensor-parallel rank."""

    def __init__(self, cfg: dict[str, Any], tp: int, rank: int, device: torch.device, dtype: torch.dtype,
                 batch: int, cache_len: int) -> None:
        self.h = cfg["hidden_size"]
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg.get("num_key_value_heads", self.heads)
        self.d = cfg.get("head_dim") or self.h // self.heads
        self.ffn = cfg["intermediate_size"]
        self.vocab = cfg["vocab_size"]
        self.tp, self.rank = tp, rank
        self.lh = self.heads // tp
        self.lkv = max(1, self.kv_heads // tp)
        self.lffn = self.ffn // tp
        self.lvocab = math.ceil(self.vocab / tp)
        self.eps = cfg.get("rms_norm_eps", 1e-5)
        self.tied = bool(cfg.get("tie_word_embeddings", False))
        kw: dict[str, Any] = {"device": device, "dtype": dtype}

        def w(*shape: int) -> torch.Tensor:
            return torch.randn(*shape, **kw) * 0.02

        self.embed = w(self.lvocab, self.h)
        self.lm_head = self.embed if self.tied else w(self.lvocab, self.h)
        self.final_norm = torch.ones(self.h, **kw)
        self.qkv = [w((self.lh + 2 * self.lkv) * self.d, self.h) for _ in range(self.layers)]
        self.o = [w(self.h, self.lh * self.d) for _ in range(self.layers)]
        self.gate_up = [w(2 * self.lffn, self.h) for _ in range(self.layers)]
        self.down = [w(self.h, self.lffn) for _ in range(self.layers)]
        self.norms = [torch.ones(2, self.h, **kw) for _ in range(self.layers)]
        self.weight_bytes = sum(t.numel() * t.element_size() for t in self.tensors())
        self.k_cache = torch.zeros(self.layers, batch, self.lkv, cache_len, self.d, **kw)
        self.v_cache = torch.zeros_like(self.k_cache)
        self.kv_bytes = 2 * self.k_cache.numel() * self.k_cache.element_size()

    def tensors(self) -> list[torch.Tensor]:
        out = [self.embed, self.final_norm, *self.qkv, *self.o, *self.gate_up, *self.down, *self.norms]
        return out if self.tied else [*out, self.lm_head]

    def rms(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (self.h,), weight, self.eps)

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        if self.tp > 1:
            dist.all_reduce(x)
        return x

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        start = self.rank * self.lvocab
        local = ids - start
        mask = (local >= 0) & (local < self.lvocab)
        x = F.embedding(local.clamp(0, self.lvocab - 1), self.embed) * mask.unsqueeze(-1)
        return self.all_reduce(x)

    def forward(self, ids: torch.Tensor, pos: int, causal: bool) -> torch.Tensor:
        """ids [b, s] written at cache positions pos..pos+s; returns local logits of the last position."""
        b, s = ids.shape
        x = self.embed_tokens(ids)
        for i in range(self.layers):
            y = self.rms(x, self.norms[i][0])
            qkv = y @ self.qkv[i].t()
            q, k, v = qkv.split([self.lh * self.d, self.lkv * self.d, self.lkv * self.d], dim=-1)
            q = q.view(b, s, self.lh, self.d).transpose(1, 2)
            self.k_cache[i, :, :, pos:pos + s] = k.view(b, s, self.lkv, self.d).transpose(1, 2)
            self.v_cache[i, :, :, pos:pos + s] = v.view(b, s, self.lkv, self.d).transpose(1, 2)
            keys = self.k_cache[i, :, :, :pos + s]
            values = self.v_cache[i, :, :, :pos + s]
            attn = F.scaled_dot_product_attention(q, keys, values, is_causal=causal and s > 1,
                                                  enable_gqa=self.lh != self.lkv)
            x = x + self.all_reduce(attn.transpose(1, 2).reshape(b, s, self.lh * self.d) @ self.o[i].t())
            y = self.rms(x, self.norms[i][1])
            gate, up = (y @ self.gate_up[i].t()).chunk(2, dim=-1)
            x = x + self.all_reduce((F.silu(gate) * up) @ self.down[i].t())
        last = self.rms(x[:, -1], self.final_norm)
        return last @ self.lm_head.t()


def timed(fn: Any, reps: int, device: torch.device) -> dict[str, float]:
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "reps": reps}


def run_case(cfg: dict[str, Any], name: str, batch: int, context: int, args: argparse.Namespace,
             device: torch.device, tp: int, rank: int) -> dict[str, Any]:
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated() if device.type == "cuda" else 0
    model = TPLlama(cfg, tp, rank, device, dtype, batch, context + 8)
    row: dict[str, Any] = {"kind": "tp", "model": name, "tp": tp, "batch": batch, "context": context,
                           "weights_bytes_rank": model.weight_bytes, "kv_bytes_rank": model.kv_bytes}
    gen = torch.Generator(device="cpu").manual_seed(0)
    prompt = torch.randint(0, model.vocab, (batch, context), generator=gen).to(device)
    with torch.inference_mode():
        if args.prefill and batch * context <= args.max_prefill_tokens:
            model.forward(prompt, 0, True)  # warm-up
            row["prefill"] = timed(functools.partial(model.forward, prompt, 0, True), 3, device)
        else:
            model.k_cache.normal_()
            model.v_cache.normal_()
        step_ids = prompt[:, :1].clone()
        pos = context
        model.forward(step_ids, pos, False)
        row["decode_eager"] = timed(functools.partial(model.forward, step_ids, pos, False), 5, device)
        if device.type == "cuda" and not args.no_graph:
            try:
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    for _ in range(3):
                        model.forward(step_ids, pos, False)
                torch.cuda.current_stream().wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    model.forward(step_ids, pos, False)
                graph.replay()
                torch.cuda.synchronize()
                row["decode_graph"] = timed(graph.replay, 50, device)
                del graph
            except Exception as error:  # keep the eager figure if capture fails
                row["graph_error"] = f"{type(error).__name__}: {error}"[:300]
    if device.type == "cuda":
        torch.cuda.synchronize()
        row["peak_allocated_rank"] = torch.cuda.max_memory_allocated() - before
        row["allocated_rank"] = torch.cuda.memory_allocated() - before
        row["reserved_rank"] = torch.cuda.memory_reserved()
        row["nvml_used_gpu"] = nvml_used(torch.cuda.current_device())
    del model
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", action="append", required=True)
    parser.add_argument("--cases", default="1x1024,16x4096", help="batch x context, comma separated")
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="shrink the config (CPU test)")
    parser.add_argument("--prefill", action="store_true")
    parser.add_argument("--max-prefill-tokens", type=int, default=16384)
    parser.add_argument("--no-graph", action="store_true")
    args = parser.parse_args()

    device_kind = args.device
    dist.init_process_group("nccl" if device_kind == "cuda" else "gloo")
    rank, tp = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    device = torch.device(device_kind, local) if device_kind == "cuda" else torch.device("cpu")
    if device_kind == "cuda":
        torch.cuda.set_device(device)
    out = Path(args.out)
    for name in args.model:
        cfg = yaml.safe_load((SPECS / f"{name}.yaml").read_text())["config"]
        if args.tiny:
            cfg = cfg | {"hidden_size": 256, "num_hidden_layers": 2, "intermediate_size": 512, "vocab_size": 1000,
                         "head_dim": 32, "num_attention_heads": 8, "num_key_value_heads": 2}
        for case in args.cases.split(","):
            batch, context = (int(x) for x in case.split("x"))
            try:
                row = run_case(cfg, name, batch, context, args, device, tp, rank)
            except Exception as error:  # one failed case must not lose the run
                row = {"kind": "tp", "model": name, "tp": tp, "batch": batch, "context": context,
                       "error": f"{type(error).__name__}: {error}"[:500]}
                if device_kind == "cuda":
                    torch.cuda.empty_cache()
            rows: list[Any] = [None] * tp
            dist.all_gather_object(rows, row)
            if rank == 0:
                merged = dict(rows[0])
                for key in ("peak_allocated_rank", "nvml_used_gpu", "reserved_rank"):
                    merged[key.replace("_rank", "") + "_all"] = [r.get(key) for r in rows]
                with out.open("a") as f:
                    f.write(json.dumps(merged) + "\n")
                print(json.dumps(merged), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
