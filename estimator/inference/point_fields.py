"""The Report's fields that a point (batch, prompt, output) sets, by field name: `estimate` builds its MemoryReport
and TimeReport from these, and a sweep takes its columns from the same functions evaluated on numpy arrays of the
grid (`estimator.planning.sweep`), so the two cannot drift apart. Every value is a scalar or an array alike."""

from __future__ import annotations

from typing import Any

from estimator.model.footprint import GpuMemory
from estimator.model.timing import PhaseCost, PhaseTime


def memory_point_fields(mem: GpuMemory, gpus: int, capacity: int) -> dict[str, Any]:
    """The `MemoryReport` fields that one rank's memory ``mem`` sets, by field name: each total over the ``gpus``
    ranks, each rank's figure, the fit and the headroom on ``capacity`` bytes (a sweep's arrays alike: it takes
    its memory columns from here)."""
    group = mem.across(gpus)
    return {"kv_cache_bytes": group.kv, "activation_bytes": group.activation, "overhead_bytes": group.overhead,
            "total_bytes": group.per_gpu, "per_gpu_bytes": mem.per_gpu, "kv_cache_per_gpu_bytes": mem.kv,
            "activation_per_gpu_bytes": mem.activation, "overhead_per_gpu_bytes": mem.overhead,
            "fits": mem.per_gpu <= capacity, "headroom_bytes": capacity - mem.per_gpu, "state_bytes": group.state,
            "state_per_gpu_bytes": mem.state}


def time_point_fields(prefill_cost: PhaseCost, decode_cost: PhaseCost, prefill: PhaseTime, decode: PhaseTime | None,
                      step: PhaseTime | None, batch: float, gpus: int) -> dict[str, Any]:
    """The `TimeReport` fields each phase's work and time set, by field name, for ``batch`` sequences (FLOPs and
    bytes summed over ``gpus``); the decode's None for an encoder (a sweep's arrays alike: it takes its time columns
    from here)."""
    tokens_per_s = None if step is None else batch / step.expected_s
    return {
        "prefill_s": prefill.expected_s, "prefill_bound_s": prefill.bound_s, "prefill_bound": prefill.bound,
        "decode_step_s": None if decode is None else decode.expected_s,
        "decode_step_bound_s": None if decode is None else decode.bound_s,
        "bound": None if decode is None else decode.bound,
        "time_to_first_token_s": prefill.expected_s,
        "tokens_per_s": tokens_per_s,
        "tokens_per_s_bound": None if step is None else batch / step.bound_s,
        "tokens_per_s_per_sequence": None if tokens_per_s is None else tokens_per_s / batch,
        "prefill_flops": prefill_cost.flops * gpus, "prefill_bytes": prefill_cost.bytes * gpus,
        "decode_bytes": None if decode is None else decode_cost.bytes * gpus,
        "decode_flops": None if decode is None else decode_cost.flops * gpus,
        "communication_s": prefill.communication_s + (0.0 if decode is None else decode.communication_s),
        "prefill_flop_per_byte": prefill_cost.flop_per_byte,
        "prefill_flop_per_s_per_gpu": prefill_cost.flop_per_s(prefill.expected_s),
        "decode_flop_per_byte": None if decode is None else decode_cost.flop_per_byte,
        "decode_flop_per_s_per_gpu": None if decode is None else decode_cost.flop_per_s(decode.expected_s),
    }
