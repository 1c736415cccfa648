"""The wording of the arithmetic lines (`--explain`) whose sentence is more than a format string: how a term divides
over the tensor-parallel GPUs, the rule that combines a phase's parts into its expected time, and what more GPUs add
to each GPU's memory."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from estimator.units import format_flops, format_rate_bytes, format_seconds

# a link tier in words
TIERS = {"link": "the intra-node link", "pcie": "PCIe between link domains", "network": "the scale-out network"}
Bytes = Callable[[float], str]  # a byte count → "140.0 GB" or "130.4 GiB"
EXPECTED: dict[str, type | tuple[type, ...]] = {
    "profile": str, "compute_s": float, "weights_s": float, "elementwise_s": float, "kv_s": float, "layers": int,
    "fixed_ops": int, "fixed_s": float, "host_s": float, "communication_s": float, "bound_s": float, "seconds": float,
    "experts_s": float, "math_s": float}


def span(window: int | None) -> str:
    """The attention span a KV part covers: every token, or a sliding window."""
    return "global" if window is None else f"window {window:,}"


def divided(split: int) -> str:
    """`` ÷ N`` where a term divides over N GPUs, nothing where it does not."""
    return f" ÷ {split}" if split > 1 else ""


def kv_split(v: Mapping[str, Any], b: Bytes) -> str:
    """How one KV part divides over the tensor-parallel GPUs: heads split, replicated beyond them, or not at all."""
    gpus, split = v["gpus"], v["split"]
    if gpus == 1:
        return ""
    if split == 1:
        return f"; every one of the {gpus} GPUs holds all of it (the latent has no heads to split)"
    shared = "" if split == gpus else f", each head on {gpus // split} of the {gpus} GPUs"
    return f"; ÷ {split} (KV heads split{shared}) = {b(v['bytes'])} per GPU"


def weights_split(v: Mapping[str, Any], b: Bytes) -> str:
    """Where the tensor-parallel weights come from: the sharded part ÷ TP, plus what every GPU holds whole."""
    if v["gpus"] == 1:
        return ""
    replicated = v["replicated_bytes"]
    if not replicated:
        return f" ({b(v['weights_total_bytes'])} ÷ {v['gpus']})"
    return (f" (({b(v['weights_total_bytes'])} − {b(replicated)}) ÷ {v['gpus']} + {b(replicated)}: norms, biases, "
            "routers and position tables stay whole on every GPU)")


def expected(phase: str, v: Mapping[str, Any], b: Bytes) -> str:
    """The rule of `estimator.model.timing.phase_time`, with its numbers: the GEMMs take the larger of their compute
    and their weight reads; elementwise passes, the KV read and a fixed cost per layer (or per counted operation)
    add to it; the host's dispatch runs beside the GPU (the larger counts); the all-reduces add; the roofline bound
    is the floor. A part that is 0 (no host dispatch, one GPU) is left out."""
    s = format_seconds
    gpu = (max(v["compute_s"], v["weights_s"]) + v["elementwise_s"] + v["kv_s"] + v["fixed_s"] + v["experts_s"]
           + v["math_s"])
    parts = [f"max(compute {s(v['compute_s'])}, weight reads {s(v['weights_s'])})"]
    parts += [f"{name} {s(v[key])}" for name, key in (
        ("routed experts (grouped GEMMs and their dispatch)", "experts_s"), ("elementwise", "elementwise_s"),
        ("KV reads", "kv_s"), ("math-kernel attention (fp32 KV copies and GEMMs)", "math_s"),
        (_fixed_cost(v), "fixed_s")) if v[key]]
    text = f"{phase} expected ({v['profile']}): {' + '.join(parts)} = {s(gpu)} on the GPU"
    if v["host_s"]:
        text += f"; host dispatch {s(v['host_s'])} runs beside it, the larger counts"
    if v["communication_s"]:
        text += f"; + communication {s(v['communication_s'])}"
    if v["seconds"] > max(gpu, v["host_s"]) + v["communication_s"]:
        text += f"; raised to the roofline bound {s(v['bound_s'])}"
    return f"{text} → {s(v['seconds'])}"


def _fixed_cost(v: Mapping[str, Any]) -> str:
    """What the fixed GPU cost is counted over: the operations where the profile counts them, else the layers."""
    if v["fixed_ops"]:
        return f"{v['fixed_ops']:,} operations' fixed cost (each kernel's launch and tail)"
    return f"{v['layers']} layers' fixed cost"


def gpu_buffers(v: Mapping[str, Any], b: Bytes) -> str:
    """What a GPU of a multi-GPU job holds that one GPU alone does not: NCCL buffers, DDP's gradient buckets."""
    ddp = f" and {b(v['ddp_bytes'])} of DDP gradient buckets" if v["ddp_bytes"] else ""
    return (f"each of the {v['gpus']} GPUs holds {b(v['nccl_bytes'])} of NCCL buffers (in overhead){ddp}, which one "
            "GPU alone does not")


HOST_BOUND: dict[str, type | tuple[type, ...]] = {
    "phase": str, "profile": str, "seconds": float, "host_s": float, "operations": float, "per_op_s": float,
    "layers": int, "per_layer_s": float, "ratio": float, "fast_s": float, "slow_s": float, "low_s": float,
    "high_s": float}


def host_bound(v: Mapping[str, Any]) -> str:
    """A host-bound phase's time, the figure its host dispatch comes from (operations counted or, for a family the
    profile counts none of, layers), and how far the host's state moves it (`timing.host_state_range`)."""
    s = format_seconds
    source = (f"{v['operations']:,.0f} counted operations × {s(v['per_op_s'])}" if v["operations"] else
              f"{v['layers']} layers × {s(v['per_layer_s'])} (the profile counts no operations for this family)")
    states = (f"that host's bare launch moved between {s(v['fast_s'])} and {s(v['slow_s'])} from case to case (its "
              f'two states, docs/accuracy.md, "Host dispatch"): {s(v["low_s"])} to {s(v["high_s"])} on that host')
    return (f"{v['phase']} is bound by the host's dispatch ({v['profile']}): {s(v['seconds'])}, its host dispatch "
            f"{s(v['host_s'])} from {source}; the profile's host figures were measured where a counted operation "
            f"cost {v['ratio']:.2f} × one bare launch, and {states}; `estimator calibrate` measures this machine's "
            "cost per operation")


DECODE_ATTENTION: dict[str, type | tuple[type, ...]] = {
    "profile": str, "group": int, "query_rows": int, "tiles": int, "reread": float, "head_dim": int,
    "tile_head_dim": int, "full_width": bool, "efficiency": float, "factor": float, "repeat": (str, type(None))}


def decode_attention(v: Mapping[str, Any]) -> str:
    """How the decode kernel's tiles move the KV read (`estimator.model.decode_attention.tile_reads`)."""
    parts = []
    if v["repeat"] == "copy":
        parts.append(f"the runtime's mask makes it repeat the KV heads first (repeat_kv): each of the {v['group']} "
                     "query heads per KV head reads a copy of its own, written before (that copy's time joins the KV "
                     'read, docs/accuracy.md, "Decode attention kernels")')
    elif v["repeat"] == "view":
        parts.append(f"the runtime's mask makes it repeat the one KV head as a view (repeat_kv): its {v['group']} "
                     f"query heads each walk it, each further walk {v['reread']:.2f} of the first (docs/accuracy.md, "
                     '"Decode attention kernels")')
    if v["tiles"] > 1:
        parts.append(f"a tile holds {v['query_rows']} query heads of one KV head, so each KV head's cache is walked "
                     f"{v['tiles']} times for its {v['group']} query heads (each further walk {v['reread']:.2f} of "
                     "the first)")
    if v["full_width"]:
        paid = "" if v["tile_head_dim"] == v["head_dim"] else ", paying its whole width,"
        parts.append(f"head dim {v['head_dim']} runs the {v['tile_head_dim']}-wide tile{paid} at "
                     f"{v['efficiency']:.2f} of the narrower tiles' rate")
    return (f"decode attention ({v['profile']}): {'; '.join(parts)}: the KV read takes {v['factor']:.2f} × one read "
            "of the cache at the profile's bandwidth (the kernel measured on an H200, docs/accuracy.md, "
            '"Decode attention kernels")')


PREFILL_BOUND: dict[str, type | tuple[type, ...]] = {
    "flops": float, "gpus": int, "peak_flop_per_s": float, "bytes": float, "bandwidth_bytes_per_s": float,
    "seconds": float, "bound": str}


def prefill_bound(v: Mapping[str, Any], b: Bytes) -> str:
    """The prefill's roofline bound by the side that sets it: its FLOPs at the peak, or its bytes at the bandwidth
    (the other side beside it)."""
    flops = (f"{v['flops']:.3e} FLOP ÷ ({v['gpus']} GPU × {format_flops(v['peak_flop_per_s'])})")
    moved = f"{b(v['bytes'])} ÷ ({v['gpus']} GPU × {format_rate_bytes(v['bandwidth_bytes_per_s'])})"
    first, other = (flops, moved) if v["bound"] == "compute" else (moved, flops)
    return f"prefill bound: {first} = {format_seconds(v['seconds'])} ({v['bound']}; {other} is less)"


TRAIN_DISPATCH: dict[str, type | tuple[type, ...]] = {
    "profile": str, "family": str, "mode": str, "checkpointed": bool, "layers": int, "uncounted": str,
    "forward_ops": int, "backward_ops": int, "forward_host_s": float, "backward_host_s": float, "forward_gpu_s": float,
    "backward_gpu_s": float}


def train_dispatch(v: Mapping[str, Any]) -> str:
    """An eager training step's forward and backward: the GPU's time beside the host's dispatch, the longer counts,
    and where the dispatch comes from (`estimator.training.host_ops`)."""
    s = format_seconds

    def phase(name: str) -> str:
        host, gpu, ops = v[f"{name}_host_s"], v[f"{name}_gpu_s"], v[f"{name}_ops"]
        source = f"{ops:,} operations × {s(host / ops)} = " if ops else ""
        return f"{name} GPU {s(gpu)}, host dispatch {source}{s(host)} ({'host' if host > gpu else 'GPU'} sets it)"

    what = (f"{v['family']}'s operations ({v['mode']}{', checkpointed' if v['checkpointed'] else ''}), counted by "
            'the profile (docs/accuracy.md, "Training steps")' if not v["uncounted"] else
            f"the profile's host figures per layer × {v['layers']} layers ({v['uncounted']})")
    return f"one micro-batch ({v['profile']}): {phase('forward')}; {phase('backward')} — {what}"


PREFILL_KERNELS: dict[str, type | tuple[type, ...]] = {
    "profile": str, "gemms": int, "dtype": str, "kernel_s": (float, type(None)), "flop_efficiency": (float, type(None)),
    "bandwidth_efficiency": (float, type(None)), "strided_elements": float, "elements_per_s": (float, type(None))}


def prefill_kernels(v: Mapping[str, Any]) -> str:
    """How the prefill's GEMMs and elementwise kernels are timed where the profile times them by shape and kernel
    path (`estimator.model.gemms`, `timing.elementwise_time_s`; docs/accuracy.md, "Prefill kernels")."""
    parts = []
    if v["gemms"]:
        parts.append(f"{v['gemms']:,} {v['dtype']} GEMM kernels, each {format_seconds(v['kernel_s'])} plus the longer "
                     f"of its FLOPs at {v['flop_efficiency']:.2f} of the peak and its operands' and output's bytes at "
                     f"{v['bandwidth_efficiency']:.2f} of the bandwidth")
    if v["strided_elements"]:
        parts.append(f"{v['strided_elements']:,.0f} output elements of its elementwise operations on PyTorch's "
                     f"non-vectorized kernels (strided or broadcast operands, casts to a wider type) at "
                     f"{v['elements_per_s']:.3g} a second")
    return (f"prefill kernels ({v['profile']}): {'; '.join(parts)} — rates measured alone on an H200, "
            'docs/accuracy.md, "Prefill kernels"')


PREFILL_ATTENTION: dict[str, type | tuple[type, ...]] = {
    "profile": str, "layers": int, "sliding": int, "window": (int, type(None)), "masked_efficiency": float,
    "math": bool}


def prefill_attention(v: Mapping[str, Any]) -> str:
    """Which of PyTorch's SDPA kernels a prefill's layers reach under a runtime that takes windows as masks
    (`estimator.model.attention_kernels`): the rule, which holds at every prompt length."""
    parts = []
    if v["window"] is not None:
        parts.append(f"{v['sliding']} of {v['layers']} layers are sliding (window {v['window']:,}): once the prompt "
                     "reaches the window transformers gives them an explicit mask — every causal pair on the "
                     f"memory-efficient kernel at {v['masked_efficiency']:.2f} of the peak, and a boolean prompt × "
                     "prompt mask in the peak; below it, no mask and the fused kernel")
    if v["math"]:
        parts.append("the layers without a mask run PyTorch's math kernel (fp32 grouped-query heads, or unexpanded "
                     "KV heads with a mask): every score materialised, 9 bytes each at the peak and 38 moved (44 "
                     "from 16-bit inputs, whose probabilities it converts back), its GEMMs in fp32")
    return f"prefill attention ({v['profile']}): {'; '.join(parts)} — docs/accuracy.md, \"Prefill kernels\""


DECODE_MATH_ATTENTION: dict[str, type | tuple[type, ...]] = {
    "profile": str, "heads": int, "layers": int, "copies": float, "elements_per_s": float, "gemms": int,
    "kernel_s": float, "bandwidth_efficiency": float}


def decode_math_attention(v: Mapping[str, Any]) -> str:
    """A decode step on PyTorch's math SDPA kernel (`estimator.model.attention_kernels.unexpanded_math_work`)."""
    return (f"decode attention ({v['profile']}): the model hands SDPA its one KV head with a mask, so PyTorch runs its "
            f"math kernel in fp32: K and V copied for each of {v['heads']:,} query heads in {v['layers']:,} layers "
            f"({v['copies']:,.0f} elements a step at {v['elements_per_s']:.3g} a second), then {v['gemms']:,} batched "
            f"GEMMs of one query row, each {format_seconds(v['kernel_s'])} plus its bytes at "
            f"{v['bandwidth_efficiency']:.2f} of the bandwidth — docs/accuracy.md, \"Decode attention kernels\"")


DECODE_KERNELS: dict[str, type | tuple[type, ...]] = {
    "profile": str, "walk": bool, "max_head_dim": (int, type(None)), "fixed_s": float, "key_s": float,
    "streams": float, "streams_per_wave": float, "waves": float, "heads": str, "gemms": int,
    "kernel_s": (float, type(None)), "flop_efficiency": (float, type(None)),
    "bandwidth_efficiency": (float, type(None))}


_WALK_HEADS = {"own": "each query head's own KV head", "copied": "repeat_kv's copies, written first",
               "view": "one per KV head; its view's further query heads read it from L2"}


def decode_kernels(v: Mapping[str, Any]) -> str:
    """An fp32 decode step's attention walk and GEMMs by shape (`timing.cache_attention_s`, `phases._decode_gemms`;
    docs/accuracy.md, "Decode time")."""
    parts = []
    if v["walk"]:
        variant = "any head dim" if v["max_head_dim"] is None else f"head dims up to {v['max_head_dim']}"
        parts.append(f"attention on PyTorch's memory-efficient kernel (its variant for {variant}), one thread block "
                     "per sequence and query head walking the cache: a layer takes "
                     f"{format_seconds(v['fixed_s'])} plus {v['key_s'] * 1e9:.0f} ns a cache position for each of "
                     f"{v['waves']:,.0f} wave(s) of up to {v['streams_per_wave']:g} blocks reading distinct memory "
                     f"({v['streams']:,.0f} here: {_WALK_HEADS[v['heads']]})")
    if v["gemms"]:
        parts.append(f"{v['gemms']:,} GEMM kernels of more than one row, each {format_seconds(v['kernel_s'])} plus "
                     f"the longer of its FLOPs at {v['flop_efficiency']:.2f} of the peak and its operands' and "
                     f"output's bytes at {v['bandwidth_efficiency']:.2f} of the bandwidth (one sequence runs a GEMV, "
                     "which streams its weights at the bandwidth)")
    return f"fp32 decode kernels ({v['profile']}): {'; '.join(parts)} — docs/accuracy.md, \"Decode time\""


# code → (values, wording) of the assumptions a phase's time carries, merged into the notes' table (`estimator.notes`)
PHASE_SPECS: dict[str, tuple[dict[str, type | tuple[type, ...]], Callable[[Mapping[str, Any], Bytes], str]]] = {
    "prefill-bound": (PREFILL_BOUND, prefill_bound),
    "host-bound": (HOST_BOUND, lambda v, b: host_bound(v)),
    "decode-attention": (DECODE_ATTENTION, lambda v, b: decode_attention(v)),
    "train-dispatch": (TRAIN_DISPATCH, lambda v, b: train_dispatch(v)),
    "prefill-kernels": (PREFILL_KERNELS, lambda v, b: prefill_kernels(v)),
    "prefill-attention": (PREFILL_ATTENTION, lambda v, b: prefill_attention(v)),
    "decode-math-attention": (DECODE_MATH_ATTENTION, lambda v, b: decode_math_attention(v)),
    "decode-kernels": (DECODE_KERNELS, lambda v, b: decode_kernels(v)),
    "size-only-time": ({}, lambda v, b: (
        "prefill time counts 2 × params FLOPs per token without attention; decode reads weights only"))}
