"""Host issue time, GPU wall time and the kernels' busy time of one call, as lab/measure/random_architectures.py writes
them into its rows (``issue``, ``step_extra``): the host's time to issue a forward or a step from an idle GPU,
the wall time until its last kernel ends (CUDA events), and the time its kernels ran (torch.profiler)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator.live import device, host_cost, measure


def host_probe() -> float | None:
    """The host's speed at this moment: median seconds per in-place add (`estimator.live.host_cost.bare_op_s`).
    Written into every row before and after its case, so a host-bound time can be read against it."""
    return host_cost.bare_op_s()


def host_and_gpu(fn: Any) -> tuple[float, float]:
    """(host seconds to issue ``fn``, GPU seconds it ran), from an idle GPU: the host time is the dispatch floor
    where the GPU keeps up, and no more than the GPU time (plus the queue's slack) where it does not."""
    t = measure.require_cuda()
    device.sync()
    if device._cpu():
        began = time.perf_counter()
        fn()
        return time.perf_counter() - began, time.perf_counter() - began
    start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
    start.record()
    began = time.perf_counter()
    fn()
    host = time.perf_counter() - began
    end.record()
    end.synchronize()
    return host, start.elapsed_time(end) / 1e3


def timed(fn: Any, reps: int) -> tuple[float, float]:
    """Median (host, GPU) seconds of ``reps`` calls after one warm-up."""
    timings = [host_and_gpu(fn) for _ in range(reps + 1)][1:]
    return sorted(v[0] for v in timings)[reps // 2], sorted(v[1] for v in timings)[reps // 2]


def timed_reps(fn: Any, reps: int) -> dict[str, Any]:
    """`timed`'s medians (``host_s``, ``gpu_s``) with every repeat beside them (``host_reps``, ``gpu_reps``), so
    the spread of one case between repeats is in the row."""
    timings = [host_and_gpu(fn) for _ in range(reps + 1)][1:]
    hosts, gpus = [v[0] for v in timings], [v[1] for v in timings]
    return {"host_s": sorted(hosts)[reps // 2], "gpu_s": sorted(gpus)[reps // 2], "host_reps": hosts,
            "gpu_reps": gpus}


# attention first: the memory-efficient SDPA kernel is a CUTLASS kernel (fmha_cutlassF_...)
KERNEL_KINDS = (("attention", ("flash", "fmha", "attention", "efficient", "softmax")),
                ("gemm", ("gemm", "cutlass", "xmma", "nvjet", "cublas", "splitk")))


def kernel_kind(name: str) -> str:
    """A CUDA kernel's kind by its name: ``attention`` (the SDPA kernels and the math kernel's softmax), ``gemm``
    (cuBLAS / CUTLASS matrix products) or ``other`` (elementwise, reductions, copies)."""
    lowered = name.lower()
    return next((kind for kind, marks in KERNEL_KINDS if any(mark in lowered for mark in marks)), "other")


def kernel_times(fn: Any) -> dict[str, Any]:
    """Seconds the GPU's kernels ran during one call of ``fn`` (torch.profiler, CUDA activity), by kind, and how
    many kernels ran: the GPU's busy time, which the CUDA-event timings (wall time from an idle GPU) do not give
    apart from the host's gaps. Empty on the CPU dry run; ``kernels_error`` where the profiler fails."""
    t = measure.require_cuda()
    if device._cpu():
        return {}
    try:
        from torch.profiler import ProfilerActivity, profile

        fn()
        device.sync()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            device.sync()
        seconds = {"gemm": 0.0, "attention": 0.0, "other": 0.0}
        count = 0
        for event in prof.events():
            if getattr(event, "device_type", None) != t.autograd.DeviceType.CUDA:
                continue
            count += 1
            seconds[kernel_kind(event.name)] += event.time_range.elapsed_us() / 1e6
    except Exception as error:
        return {"kernels_error": measure._why(error)}
    return {"kernels": count, "kernel_s": sum(seconds.values()), **{f"{k}_kernel_s": v for k, v in seconds.items()}}


def step_extra(step: Any) -> dict[str, Any]:
    """One steady training step's host issue and GPU time (3 repeats, the host's speed probed just before) and its
    kernels' busy time by kind."""
    probe = host_probe()
    return {**timed_reps(step, 3), "host_op_s": probe, **kernel_times(step)}


