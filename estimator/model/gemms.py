"""A prefill's GEMMs one by one, each timed by its shape (the profile's `GemmRoofline`).

A GEMM of ``m`` rows by a ``k`` × ``n`` weight takes its kernel's fixed time (launch, prologue, tail: a few microseconds
even back to back in a queue) plus the longer of its FLOPs at a fraction of the peak and the bytes of its two operands
and its output at a fraction of the bandwidth. Summed over a forward's GEMMs this is what one FLOP share cannot be: at
128–1,024 tokens or on narrow layers the fixed time and the activations' bytes are a large part of each GEMM, at 4,096
tokens and more the FLOPs are all of it. Measured alone on the H200 (`lab/fit/gemm.py`, docs/accuracy.md,
"Prefill kernels"), fp32 GEMMs (CUDA cores, TF32 off) reached 2–53 TFLOP/s by shape where the profile's single share
said 49.5.

`prefill_gemms` lists the GEMMs from the tensor inventory, so they are the weight matrices the parameter count
holds: every dense linear layer once per token, the LM head once per logit position, and where PyTorch's math SDPA
kernel runs, its two batched GEMMs per attention layer (QKᵀ and PV over every pair). Fused projections (GPT-2's
c_attn, Phi-3's qkv_proj and gate_up_proj) are listed as their parts: the same FLOPs and weight bytes, more kernels.
A model whose linear layers the inventory does not give by shape (routed experts, recurrent mixers, towers) gets
None, and its GEMMs keep the FLOP share.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.catalog.architecture import Architecture
from estimator.catalog.profiles import GemmRoofline
from estimator.model.elementwise import any_true, maximum
from estimator.model.inventory import Role, lm_head_numel, tensor_inventory
from estimator.model.rates import achievable

_SHAPED = (Role.ATTENTION, Role.MLP, Role.SHARED_EXPERT, Role.ROUTER, Role.POOLER)
_ROW_PARALLEL = ("o_proj", "down_proj")  # tensor parallel splits these along their input, the others their output


@dataclass(frozen=True)
class Gemm:
    """``count`` GEMMs, each ``batch`` products of ``m`` × ``k`` by ``k`` × ``n``."""

    m: int
    k: int
    n: int
    count: int
    batch: int = 1

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.m * self.k * self.n * self.count


def prefill_gemms(arch: Architecture, batch: int, prompt: int, *, logits_positions: int, tp: int,
                  math_layers: int = 0) -> tuple[Gemm, ...] | None:
    """One rank's GEMMs of a prefill of ``batch`` × ``prompt`` tokens, with the batched GEMMs of ``math_layers``
    layers' math SDPA kernel; None where the inventory lacks a shape."""
    tokens = batch * prompt
    out: list[Gemm] = []
    for group in tensor_inventory(arch):
        if group.role is Role.EXPERT or group.role.is_tower or group.role is Role.SSM:
            return None
        if group.role not in _SHAPED:
            continue
        if not group.in_features:
            return None
        k, n = group.in_features, group.numel // group.in_features
        row_parallel = any(part in group.name for part in _ROW_PARALLEL)
        out.append(Gemm(tokens, k // tp if row_parallel else k, n if row_parallel else n // tp, group.count))
    head = lm_head_numel(arch)
    if head:
        out.append(Gemm(batch * logits_positions, arch.hidden_size, head // arch.hidden_size // tp, 1))
    if any_true(math_layers > 0):  # a sweep's array of counts, elementwise
        attn = arch.attention
        pairs = batch * attn.num_heads // tp
        out += [Gemm(prompt, attn.head_dim, prompt, math_layers, pairs),
                Gemm(prompt, prompt, attn.v_head_dim, math_layers, pairs)]
    return tuple(out)


def gemms_s(gemms: tuple[Gemm, ...], spec: GemmRoofline, peak_flop_per_s: float, bandwidth_bytes_per_s: float,
            element_bytes: int) -> float:
    """Seconds of ``gemms`` one after the other: each kernel's fixed time plus the longer of its FLOPs and its
    operands' and output's bytes (`GemmRoofline`)."""
    total = 0.0
    for g in gemms:
        flop_s = 2 * g.m * g.k * g.n / achievable(peak_flop_per_s, spec.flop_efficiency)
        byte_s = (g.m * g.k + g.k * g.n + g.m * g.n) * element_bytes / achievable(bandwidth_bytes_per_s,
                                                                                  spec.bandwidth_efficiency)
        total = total + g.count * g.batch * maximum(flop_s, byte_s) + g.count * spec.kernel_s
    return total
