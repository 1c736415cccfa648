"""Measurements on a CUDA GPU with PyTorch and transformers (the ``gpu`` extra). Imported lazily by the CLI.

Every function returns plain dicts in the row format of ``tests/data/measured/reference/h200-measured.jsonl``
(bytes and seconds), so `estimator.live.validation` compares them with predictions and the benchmark scripts store
them as JSON lines. Times use CUDA events: median of repeats after warm-up. Models are built from their catalog
config with random weights, directly on the GPU (no download).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from estimator.live.device import (
    _STATE,
    _device,
    allocated,
    cuda_time,
    device_facts,
    dry_run_on_cpu,
    free_memory,
    memory_point,
    nvml_used,
    peak_allocated,
    requested,
    require_cuda,
    require_torch,
    require_transformers,
    reserved,
    reset_peak,
    sync,
)
from estimator.live.lean import calibrate, lean_decode

# What callers use through ``measure`` (the CLI and benchmarks; tests replace some of these on this module).
__all__ = ["_STATE", "calibrate", "device_facts", "dry_run_on_cpu", "free_memory", "inference_rows", "lean_decode",
           "lean_supported", "measure_train", "require_cuda", "require_torch", "require_transformers"]


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
    the cache left afterwards — both as the allocator's blocks and as the bytes the tensors requested — and
    (``latency``) the median time of a forward without cache."""
    t = require_cuda()
    ids = _ids(model, batch, prompt)
    free_memory()
    before = allocated()
    reset_peak()
    asked_before = requested()[0]
    with t.inference_mode():
        out = model(input_ids=ids, use_cache=True, logits_to_keep=logits_to_keep)
        cache = out.past_key_values
        del out
        sync()
        peak = peak_allocated() - before
        kept = allocated() - before
        asked, asked_peak = requested()
        row: dict[str, Any] = {"phase": "prefill", "batch": batch, "prompt": prompt,
                               "logits_to_keep": logits_to_keep, "peak_minus_before": peak, "kept_after": kept,
                               "requested_peak_minus_before": asked_peak - asked_before,
                               "requested_kept_after": asked - asked_before,
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


# Training ------------------------------------------------------------------------------------------------

def measure_train(config: Mapping[str, Any], *, mode: str, batch: int, seq: int, checkpointing: bool,
                  steps: int = 3, extra: Callable[[Callable[[], Any]], dict[str, Any]] | None = None
                  ) -> dict[str, Any]:
    """AdamW (PyTorch default foreach) steps on ``batch`` × ``seq`` tokens, in the reference ``kind=train`` format.

    ``mode`` amp: fp32 weights under bf16 autocast; bf16: bf16 weights and optimizer states; fp32: fp32 weights,
    no autocast. Each step: zero_grad
    (set to None), forward with labels, backward, optimizer step; memory recorded after each. ``steady_peak`` is
    the peak of the last step minus what was allocated before the model was built. ``extra`` (given one steady
    step to call) adds its fields to the row as ``step_extra`` (lab/measure/random_architectures.py: the kernels'
    busy time).
    """
    t = require_cuda()
    free_memory()
    base = allocated()
    dtype = t.float32 if mode in ("amp", "fp32") else t.bfloat16
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
    optimizer_step = cuda_time(optimizer.step, warmup=0, reps=3)  # the last step's gradients are still held
    row = {"kind": "train", "params": sum(p.numel() for p in model.parameters()), "mode": mode, "batch": batch,
           "seq": seq, "checkpointing": checkpointing, "optimizer": "AdamW(foreach default)",
           "attn_impl": model.config._attn_implementation, "model_bytes": model_bytes, "first_step": first,
           "first_step_peak": first_peak, "steady_peak": steady_peak, "steady": steady,
           "nvml_used": nvml_used(), "reserved": reserved(), "latency": latency,
           "allocated_before_model": base, "optimizer_step": optimizer_step,
           "param_tensors": sum(1 for _ in model.parameters())}
    if extra is not None:
        row["step_extra"] = extra(lambda: step(False))
    return row


# Whole validation cases (shared by `estimator validate` and lab/measure/catalog_models.py) -----------------------

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
