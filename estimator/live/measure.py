"""Measurements on a CUDA GPU with PyTorch and transformers (the ``gpu`` extra). Imported lazily by the CLI.

Every function returns plain dicts in the row format of ``tests/data/measured/reference/h200-measured.jsonl``
(bytes and seconds), so `estimator.live.validation` compares them with predictions and the benchmark scripts store
them as JSON lines. Times use CUDA events: median of repeats after warm-up. Models are built from their catalog
config with random weights, directly on the GPU (no download).
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

from estimator.errors import DeviceUnavailable, MissingDependency

# Process-wide state: the imported torch, the device measurements run on, the NVML handle.
_STATE: dict[str, Any] = {"torch": None, "device": "cuda", "nvml": None}


def dry_run_on_cpu() -> None:
    """Run every measurement on the CPU (tiny configs, for testing the code paths): memory reads as 0 and times
    come from the host clock, without CUDA graphs."""
    _STATE["device"] = "cpu"


def _cpu() -> bool:
    return bool(_STATE["device"] == "cpu")


def _device() -> str:
    return str(_STATE["device"])


def require_torch() -> Any:
    """Import torch (no CUDA work yet); missing, it is one `MissingDependency` naming the extra to install."""
    try:
        import torch as _torch  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise MissingDependency("this command needs PyTorch and transformers: pip install 'estimator[gpu]'") from None
    return _torch


def require_cuda() -> Any:
    """Import torch and check for a CUDA device; the failure is one clear error naming what is missing."""
    if _STATE["torch"] is not None:
        return _STATE["torch"]
    torch = require_torch()
    if not _cpu() and not torch.cuda.is_available():
        raise DeviceUnavailable(f"PyTorch {torch.__version__} sees no CUDA GPU (torch.cuda.is_available() is False)")
    _STATE["torch"] = torch
    return torch


def require_transformers() -> Any:
    try:
        import transformers  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise MissingDependency("this command needs transformers: pip install 'estimator[gpu]'") from None
    return transformers


# NVML (whole-device used memory, what nvidia-smi shows) ----------------------------------------------------

def nvml_used(index: int = 0) -> int | None:
    """Device memory used as NVML reports it (all processes, driver reservation included)."""
    try:
        import pynvml  # type: ignore[import-untyped,unused-ignore]

        if _STATE["nvml"] is None:
            pynvml.nvmlInit()
            _STATE["nvml"] = pynvml.nvmlDeviceGetHandleByIndex(index)
        return int(pynvml.nvmlDeviceGetMemoryInfo(_STATE["nvml"]).used)
    except Exception:  # NVML absent or unsupported: the row records None
        return None


def nvml_reserved(index: int = 0) -> int | None:
    try:
        import pynvml  # type: ignore[import-untyped,unused-ignore]

        nvml_used(index)
        return int(pynvml.nvmlDeviceGetMemoryInfo(_STATE["nvml"], version=pynvml.nvmlMemory_v2).reserved)
    except Exception:
        return None


# Timing --------------------------------------------------------------------------------------------------

def cuda_time(fn: Callable[[], Any], *, warmup: int = 2, reps: int = 5) -> dict[str, Any]:
    """Median, min and max seconds of ``fn`` over ``reps`` runs timed with CUDA events, after ``warmup`` runs."""
    t = require_cuda()
    for _ in range(warmup):
        fn()
    times = []
    if _cpu():
        for _ in range(reps):
            start_s = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start_s)
        return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "reps": reps}
    t.cuda.synchronize()
    for _ in range(reps):
        start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "reps": reps}


def graph_time(fn: Callable[[], Any], *, reps: int = 50) -> dict[str, Any]:
    """Capture ``fn`` in a CUDA graph (after a warm-up on a side stream) and time its replays."""
    t = require_cuda()
    if _cpu():
        return cuda_time(fn, warmup=1, reps=min(reps, 3))
    stream = t.cuda.Stream()
    stream.wait_stream(t.cuda.current_stream())
    with t.cuda.stream(stream):
        for _ in range(3):
            fn()
    t.cuda.current_stream().wait_stream(stream)
    graph = t.cuda.CUDAGraph()
    with t.cuda.graph(graph):
        fn()
    result = cuda_time(graph.replay, warmup=5, reps=reps)
    del graph
    return result


def free_memory() -> None:
    t = require_cuda()
    gc.collect()
    if _cpu():
        return
    t.cuda.synchronize()
    t.cuda.empty_cache()


def allocated() -> int:
    return 0 if _cpu() else int(require_cuda().cuda.memory_allocated())


def reserved() -> int:
    return 0 if _cpu() else int(require_cuda().cuda.memory_reserved())


def peak_allocated() -> int:
    return 0 if _cpu() else int(require_cuda().cuda.max_memory_allocated())


def reset_peak() -> None:
    if not _cpu():
        require_cuda().cuda.reset_peak_memory_stats()


def sync() -> None:
    if not _cpu():
        require_cuda().cuda.synchronize()


def memory_point() -> dict[str, int | None]:
    sync()
    return {"allocated": allocated(), "reserved": reserved(), "peak": peak_allocated(), "nvml_used": nvml_used()}


# Device calibration --------------------------------------------------------------------------------------

def device_facts() -> dict[str, Any]:
    """NVML before CUDA starts, then CUDA context and first cuBLAS call; must run before any other CUDA work."""
    row: dict[str, Any] = {"kind": "device", "nvml_used_before_cuda_init": nvml_used(),
                           "nvml_reserved": nvml_reserved()}
    t = require_cuda()
    transformers_version = None
    with contextlib.suppress(MissingDependency):
        transformers_version = require_transformers().__version__
    t.cuda.init()
    t.zeros(1, device=_device())
    t.cuda.synchronize()
    row["nvml_used_after_context"] = nvml_used()
    a = t.randn(256, 256, device=_device(), dtype=t.bfloat16)
    (a @ a).sum().item()
    t.cuda.synchronize()
    row["nvml_used_after_cublas"] = nvml_used()
    row["torch_reserved_after_cublas"] = reserved()
    props = t.cuda.get_device_properties(0)
    row.update(torch=t.__version__, transformers=transformers_version, name=props.name,
               sm_count=props.multi_processor_count, torch_total_memory=props.total_memory,
               cc=f"{props.major}.{props.minor}", cuda_runtime=t.version.cuda)
    return row


def _copy_and_read(size_bytes: int) -> dict[str, float]:
    t = require_cuda()
    src = t.rand(size_bytes // 4, device=_device(), dtype=t.float32)
    dst = t.empty_like(src)
    copy = cuda_time(lambda: dst.copy_(src), warmup=2, reps=10)
    read = cuda_time(src.sum, warmup=2, reps=10)
    return {"copy_bytes_per_s": 2 * size_bytes / copy["median_s"], "read_bytes_per_s": size_bytes / read["median_s"]}


def _gemv(size_bytes: int) -> float:
    t = require_cuda()
    w = t.randn(size_bytes // (2 * 8192), 8192, device=_device(), dtype=t.bfloat16)
    x = t.randn(8192, 1, device=_device(), dtype=t.bfloat16)
    gemv = cuda_time(lambda: w @ x, warmup=2, reps=10)
    return float(w.numel() * 2 / gemv["median_s"])


def _matmul(dtype_name: str, size: int = 8192) -> float:
    t = require_cuda()
    dtype = {"bf16": t.bfloat16, "fp16": t.float16, "tf32": t.float32, "fp32": t.float32}[dtype_name]
    t.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"
    try:
        a = t.randn(size, size, device=_device(), dtype=dtype)
        b = t.randn(size, size, device=_device(), dtype=dtype)
        timing = cuda_time(lambda: a @ b, warmup=2, reps=5 if dtype_name != "fp32" else 2)
    finally:
        t.backends.cuda.matmul.allow_tf32 = False
    return float(2 * size**3 / timing["median_s"])


def bandwidth_and_flops(size_bytes: int = 4 * 2**30) -> dict[str, Any]:
    """Copy (read + write counted), read-only reduction and bf16 GEMV bandwidth; 8192³ matmul rate per dtype."""
    out: dict[str, Any] = dict(_copy_and_read(size_bytes))
    free_memory()
    out["gemv_bytes_per_s"] = _gemv(size_bytes // 2)
    free_memory()
    out["matmul_flop_per_s"] = {name: _matmul(name) for name in ("bf16", "fp16", "tf32", "fp32")}
    free_memory()
    return out


def graph_kernel_cost(kernels: int = 1000) -> float:
    """Seconds per tiny kernel inside a CUDA graph: the floor under every layer's fixed cost."""
    t = require_cuda()
    x = t.zeros(1024, device=_device())

    def many() -> None:
        for _ in range(kernels):
            x.add_(1.0)

    return float(graph_time(many, reps=10)["median_s"] / kernels)


def fit_lean_decode() -> dict[str, Any]:
    """Fit time = weight bytes / bandwidth + layers × per-layer cost on synthetic Llama-shaped lean decodes.

    Two shapes: narrow layers (fixed cost dominates) and wide ones (bandwidth dominates), batch 1, 1k context.
    """
    shapes = [
        {"hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 64,
         "intermediate_size": 2816, "num_hidden_layers": 48, "vocab_size": 32000},
        {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
         "intermediate_size": 14336, "num_hidden_layers": 16, "vocab_size": 32000},
    ]
    points = []
    for shape in shapes:
        rows = [lean_decode(shape, batch=1, context=1024, attention=a) for a in ("flash", "matmul")]
        best = min(r["graph"]["median_s"] for r in rows)
        points.append((rows[0]["weights_bytes"] + rows[0]["kv_bytes"], shape["num_hidden_layers"], best))
    (b1, l1, t1), (b2, l2, t2) = points
    # Two equations, two unknowns: t = b / bw + l × c
    det = b1 * l2 - b2 * l1
    inv_bw = (t1 * l2 - t2 * l1) / det
    per_layer = (b1 * t2 - b2 * t1) / det
    return {"graph_bandwidth_bytes_per_s": 1 / inv_bw if inv_bw > 0 else b2 / t2,
            "graph_layer_s": max(per_layer, 0.0), "lean_fit_points": points}


def calibrate() -> dict[str, Any]:
    """Everything `estimator calibrate` records (raw; `estimator.live.calibration` derives the profile values)."""
    facts = device_facts()
    before, context = facts["nvml_used_before_cuda_init"], facts["nvml_used_after_context"]
    cublas = facts["nvml_used_after_cublas"]
    raw: dict[str, Any] = {**facts}
    raw["driver_reserved_bytes"] = facts["nvml_reserved"] if facts["nvml_reserved"] is not None else (before or 0)
    raw["cuda_context_bytes"] = max(0, (context or 0) - (before or 0))
    raw["workspace_bytes"] = max(0, (cublas or 0) - (context or 0))
    raw.update(bandwidth_and_flops())
    raw["graph_kernel_s"] = graph_kernel_cost()
    raw.update(fit_lean_decode())
    free_memory()
    return raw


# Models --------------------------------------------------------------------------------------------------

def hf_config(config: Mapping[str, Any]) -> Any:
    """A transformers config from a catalog model's ``config:`` mapping (its published config.json)."""
    transformers = require_transformers()
    data = dict(config)
    model_type = data.pop("model_type")
    data.pop("architectures", None)
    data.pop("torch_dtype", None)
    data.pop("dtype", None)
    return transformers.AutoConfig.for_model(model_type, **data)


def build_model(config: Any, dtype: Any, attn_impl: str = "sdpa") -> Any:
    """A causal LM with random weights created directly on the GPU in ``dtype``."""
    transformers = require_transformers()
    t = require_cuda()
    config._attn_implementation = attn_impl
    with t.device(_device()):
        try:
            model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
        except TypeError:
            model = transformers.AutoModelForCausalLM.from_config(config, torch_dtype=dtype)
    return model.to(dtype)


def param_bytes(model: Any) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def measure_load(config: Mapping[str, Any], dtype_name: str = "bf16") -> tuple[Any, dict[str, Any]]:
    """Build the model; report its parameter bytes, allocator growth and whole-device NVML used."""
    t = require_cuda()
    dtype = {"bf16": t.bfloat16, "fp16": t.float16, "fp32": t.float32}[dtype_name]
    free_memory()
    nvml_before = nvml_used()
    alloc_before, reserved_before = allocated(), reserved()
    start = time.perf_counter()
    model = build_model(hf_config(config), dtype)
    model.eval()
    sync()
    seconds = time.perf_counter() - start
    row = {"phase": "load", "seconds": seconds, "params": sum(p.numel() for p in model.parameters()),
           "param_bytes": param_bytes(model), "attn_impl": model.config._attn_implementation,
           "allocated_delta": allocated() - alloc_before,
           "reserved_delta": reserved() - reserved_before,
           "nvml_used": nvml_used(), "nvml_used_before": nvml_before}
    free_memory()  # initialisation temporaries leave cached blocks; a checkpoint load would not
    row["nvml_used_after_empty_cache"] = nvml_used()
    _warm_up(model)
    return model, row


def _warm_up(model: Any) -> None:
    """One short prefill and one static-cache decode step, so that library workspaces (cuBLAS/cuBLASLt) are
    allocated before anything is measured rather than counted in the first case."""
    transformers = require_transformers()
    t = require_cuda()
    with t.inference_mode():
        model(input_ids=_ids(model, 1, 16), use_cache=True)
        cache = transformers.StaticCache(config=model.config, max_cache_len=32)
        position = t.tensor([16], device=_device())
        model(input_ids=_ids(model, 1, 1), past_key_values=cache, cache_position=position, use_cache=True,
              position_ids=position.expand(1, 1))
    free_memory()


def _ids(model: Any, batch: int, tokens: int) -> Any:
    t = require_cuda()
    return t.randint(0, model.config.vocab_size, (batch, tokens), device=_device())


def measure_prefill(model: Any, batch: int, prompt: int, logits_to_keep: int, *, latency: bool) -> dict[str, Any]:
    """One forward over ``batch`` × ``prompt`` tokens with a DynamicCache: peak beyond what was allocated before,
    the cache left afterwards, and (``latency``) the median time of a forward without cache."""
    t = require_cuda()
    ids = _ids(model, batch, prompt)
    free_memory()
    before = allocated()
    reset_peak()
    with t.inference_mode():
        out = model(input_ids=ids, use_cache=True, logits_to_keep=logits_to_keep)
        cache = out.past_key_values
        del out
        sync()
        peak = peak_allocated() - before
        kept = allocated() - before
        row: dict[str, Any] = {"phase": "prefill", "batch": batch, "prompt": prompt,
                               "logits_to_keep": logits_to_keep, "peak_minus_before": peak, "kept_after": kept,
                               "allocated_before": before, "nvml_used_at_end": nvml_used(),
                               "reserved_at_end": reserved()}
        del cache
        if latency:
            free_memory()
            row["latency"] = cuda_time(lambda: model(input_ids=ids, use_cache=False, logits_to_keep=logits_to_keep),
                                       warmup=1, reps=3)
    free_memory()
    return row


def measure_hf_decode(model: Any, batch: int, context: int, reps: int = 10) -> dict[str, Any]:
    """Eager Hugging Face decode: one token per sequence at position ``context`` of a StaticCache."""
    transformers = require_transformers()
    t = require_cuda()
    free_memory()
    before = allocated()
    cache_len = context + 8
    try:
        cache = transformers.StaticCache(config=model.config, max_cache_len=cache_len)
    except TypeError:  # older signature
        cache = transformers.StaticCache(config=model.config, max_batch_size=batch, max_cache_len=cache_len,
                                         device=_device(), dtype=model.dtype)
    ids = _ids(model, batch, 1)
    position = t.tensor([context], device=_device())

    def step() -> Any:
        return model(input_ids=ids, past_key_values=cache, cache_position=position, use_cache=True,
                     position_ids=position.expand(batch, 1))

    reset_peak()
    with t.inference_mode():
        step()
        sync()
        cache_bytes = allocated() - before
        eager = cuda_time(step, warmup=2, reps=reps)
    row = {"phase": "decode", "batch": batch, "context": context, "cache_len": cache_len,
           "static_cache_bytes": cache_bytes, "step_peak_minus_before": peak_allocated() - before,
           "nvml_used": nvml_used(), "eager": eager}
    return row


# Lean CUDA-graph decode (what a serving engine does) ---------------------------------------------------------

def lean_decode(config: Mapping[str, Any], batch: int, context: int, reps: int = 50,
                attention: str = "flash") -> dict[str, Any]:
    """One decode step of a Llama-shaped dense model as a serving engine runs it: RMSNorm, fused qkv GEMV,
    attention over a ``context``-token cache, o GEMV, RMSNorm, fused gate_up GEMV, SiLU-gate, down GEMV, LM head;
    captured in a CUDA graph. Random bf16 weights; sliding-window layers hold ``window`` tokens. As in the reference
    lean decode, rotary embedding and the cache write are left out (engines fuse them into one small kernel).

    ``attention``: ``flash`` = PyTorch SDPA (q as b × heads × 1, ``enable_gqa``); ``matmul`` = q·Kᵀ, softmax, ·V
    as batched GEMMs with the query heads of a KV group as rows (split over the context like flash-decoding)."""
    t = require_cuda()
    import torch.nn.functional as F  # type: ignore[import-not-found,unused-ignore]

    free_memory()
    h = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    d = int(config.get("head_dim") or h // heads)
    ffn = int(config["intermediate_size"])
    layers = int(config["num_hidden_layers"])
    vocab = int(config["vocab_size"])
    qkv_bias = bool(config.get("attention_bias") or config.get("model_type") == "qwen2")
    window = config.get("sliding_window") if config.get("use_sliding_window", True) else None
    group = heads // kv_heads
    bf16 = t.bfloat16

    def rnd(*shape: int) -> Any:
        return t.randn(*shape, device=_device(), dtype=bf16) * 0.02

    weights: list[dict[str, Any]] = []
    kv: list[tuple[Any, Any]] = []
    for layer in range(layers):
        held = context
        if window and (config.get("model_type") != "gemma2" or layer % 2 == 0):
            held = min(context, int(window))
        weights.append({"ln1": t.ones(h, device=_device(), dtype=bf16), "qkv": rnd((heads + 2 * kv_heads) * d, h),
                        "qkv_b": rnd((heads + 2 * kv_heads) * d) if qkv_bias else None,
                        "o": rnd(h, heads * d), "ln2": t.ones(h, device=_device(), dtype=bf16),
                        "gate_up": rnd(2 * ffn, h), "down": rnd(h, ffn)})
        kv.append((rnd(batch, kv_heads, held, d), rnd(batch, kv_heads, held, d)))
    final_norm = t.ones(h, device=_device(), dtype=bf16)
    lm_head = rnd(vocab, h)
    x = rnd(batch, h)
    weights_bytes = sum(v.numel() * 2 for w in weights for v in w.values() if v is not None) + h * 2 + vocab * h * 2
    kv_bytes = sum(k.numel() * 2 + v.numel() * 2 for k, v in kv)

    def attend(q: Any, k_cache: Any, v_cache: Any) -> Any:
        if attention == "flash":
            out = F.scaled_dot_product_attention(q.view(batch, heads, 1, d), k_cache, v_cache, enable_gqa=True)
            return out.reshape(batch, heads * d)
        # the 1/sqrt(d) scale is folded into the (random) q weights
        scores = t.matmul(q.view(batch, kv_heads, group, d), k_cache.transpose(-1, -2))
        probs = F.softmax(scores, dim=-1, dtype=t.float32).to(bf16)
        return t.matmul(probs, v_cache).reshape(batch, heads * d)

    def step() -> Any:
        hidden = x
        for w, (k_cache, v_cache) in zip(weights, kv, strict=True):
            qkv = F.linear(F.rms_norm(hidden, (h,), w["ln1"]), w["qkv"], w["qkv_b"])
            hidden = hidden + F.linear(attend(qkv[:, : heads * d], k_cache, v_cache), w["o"])
            gate, up = F.linear(F.rms_norm(hidden, (h,), w["ln2"]), w["gate_up"]).chunk(2, dim=-1)
            hidden = hidden + F.linear(F.silu(gate) * up, w["down"])
        return F.linear(F.rms_norm(hidden, (h,), final_norm), lm_head)

    with t.inference_mode():
        timing = graph_time(step, reps=reps)
    return {"kind": "lean_decode", "batch": batch, "context": context, "attention": attention,
            "weights_bytes": weights_bytes, "kv_bytes": kv_bytes, "experts": 1, "topk": 1, "graph": timing}


# Training ------------------------------------------------------------------------------------------------

def measure_train(config: Mapping[str, Any], *, mode: str, batch: int, seq: int, checkpointing: bool,
                  steps: int = 3) -> dict[str, Any]:
    """AdamW (PyTorch default foreach) steps on ``batch`` × ``seq`` tokens, in the reference ``kind=train`` format.

    ``mode`` amp: fp32 weights under bf16 autocast; bf16: bf16 weights and optimizer states. Each step: zero_grad
    (set to None), forward with labels, backward, optimizer step; memory recorded after each. ``steady_peak`` is
    the peak of the last step minus what was allocated before the model was built.
    """
    t = require_cuda()
    free_memory()
    base = allocated()
    dtype = t.float32 if mode == "amp" else t.bfloat16
    model = build_model(hf_config(config), dtype)
    model.train()
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    optimizer = t.optim.AdamW(model.parameters(), lr=1e-5)
    ids = _ids(model, batch, seq)
    model_bytes = param_bytes(model)

    def step(record: bool) -> dict[str, Any]:
        points: dict[str, Any] = {}
        optimizer.zero_grad(set_to_none=True)
        with t.autocast(_device(), dtype=t.bfloat16, enabled=mode == "amp"):
            loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        if record:
            points["after_forward"] = memory_point()
        loss.backward()
        del loss
        if record:
            points["after_backward"] = memory_point()
        optimizer.step()
        if record:
            points["after_step"] = memory_point()
        return points

    reset_peak()
    first = step(True)
    first_peak = peak_allocated() - base
    for _ in range(steps - 2):
        step(False)
    reset_peak()
    steady = step(True)
    steady_peak = peak_allocated() - base
    latency = cuda_time(lambda: step(False), warmup=0, reps=3)
    row = {"kind": "train", "params": sum(p.numel() for p in model.parameters()), "mode": mode, "batch": batch,
           "seq": seq, "checkpointing": checkpointing, "optimizer": "AdamW(foreach default)",
           "attn_impl": model.config._attn_implementation, "model_bytes": model_bytes, "first_step": first,
           "first_step_peak": first_peak, "steady_peak": steady_peak, "steady": steady,
           "nvml_used": nvml_used(), "reserved": reserved(), "latency": latency,
           "allocated_before_model": base}
    return row


# Whole validation cases (shared by `estimator validate` and benchmarks/measure_h200.py) -----------------------

LEAN_FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "gemma2")


def lean_supported(config: Mapping[str, Any]) -> str | None:
    """Why the lean decoder cannot run this model (None when it can): it is written for dense gated models."""
    if config.get("model_type") not in LEAN_FAMILIES:
        return f"lean decode covers dense {', '.join(LEAN_FAMILIES)} models, not {config.get('model_type')}"
    return None


def inference_rows(name: str, config: Mapping[str, Any], *, prefill: list[tuple[int, int]],
                   decode: list[tuple[int, int]], lean: list[tuple[int, int]],
                   logits: tuple[int, ...] = (1, 0), emit: Callable[[dict[str, Any]], None] | None = None,
                   load: bool = True) -> list[dict[str, Any]]:
    """Load, prefill (batch, prompt) × logits_to_keep, HF eager decode and lean graph decode (batch, context).
    Each case is guarded: a failure becomes a row with ``error`` and the rest still run."""
    rows: list[dict[str, Any]] = []

    def add(row: dict[str, Any]) -> None:
        rows.append(row)
        if emit is not None:
            emit(row)

    base = {"kind": "model", "model": name, "dtype": "bf16"}
    limit = config.get("max_position_embeddings") or config.get("n_positions")
    if limit:  # positions beyond the table index out of range (a device-side assert ends the process)
        prefill = [(b, p) for b, p in prefill if p <= limit]
        decode = [(b, c) for b, c in decode if c + 8 <= limit]
    model = None
    try:
        if load:
            model, load_row = measure_load(config)
            add({**base, **load_row})
    except Exception as error:  # keep the run going: record the failure
        add({**base, "phase": "load", "error": _why(error)})
    if model is not None:
        for batch, prompt in prefill:
            for keep in logits:
                try:
                    add({**base, **measure_prefill(model, batch, prompt, keep, latency=keep == 1)})
                except Exception as error:
                    add({**base, "phase": "prefill", "batch": batch, "prompt": prompt, "logits_to_keep": keep,
                         "error": _why(error)})
        for batch, context in decode:
            try:
                add({**base, **measure_hf_decode(model, batch, context)})
            except Exception as error:
                add({**base, "phase": "decode", "batch": batch, "context": context, "error": _why(error)})
        del model
        free_memory()
    reason = lean_supported(config)
    for batch, context in lean if reason is None else []:
        for attention in ("flash", "matmul"):
            try:
                add({**lean_decode(config, batch, context, attention=attention), "model": name})
            except Exception as error:
                add({"kind": "lean_decode", "model": name, "batch": batch, "context": context,
                     "attention": attention, "error": _why(error)})
    return rows


def _why(error: BaseException) -> str:
    free_memory()
    return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:300]
