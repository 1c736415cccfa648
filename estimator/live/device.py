"""Measuring on a CUDA GPU: torch and NVML imported once, the device (or a CPU dry run), CUDA-event
timers, memory counters, and the device facts and microbenchmarks `estimator calibrate` records.

Imported lazily (the ``gpu`` extra); `estimator.live.measure` builds and times models on top of it.
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import time
from collections.abc import Callable
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
        raise MissingDependency("this command needs PyTorch and transformers: "
                                "pip install 'llm-estimator[gpu]'") from None
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
        raise MissingDependency("this command needs transformers: pip install 'llm-estimator[gpu]'") from None
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


def requested() -> tuple[int, int]:
    """(current, peak) bytes the tensors asked PyTorch's caching allocator for, before it rounds them to blocks
    (``requested_bytes`` of ``torch.cuda.memory_stats``; `peak_allocated` counts the blocks): (0, 0) on the CPU."""
    if _cpu():
        return 0, 0
    stats = require_cuda().cuda.memory_stats()
    return int(stats.get("requested_bytes.all.current", 0)), int(stats.get("requested_bytes.all.peak", 0))


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
