"""The wording of a training report's assumptions about how its framework runs the step: communication behind
compute or not, AMP's fp32 states, DeepSpeed's ZeRO states."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from estimator.notes.arithmetic import Bytes

OVERLAP: dict[str, type | tuple[type, ...]] = {"tp": float, "pp": float, "dp": float, "gather": float}


def no_overlap(v: Mapping[str, Any], b: Bytes) -> str:
    return "communication is not overlapped with compute; DP/TP traffic crosses the card's listed interconnect"


def overlap(v: Mapping[str, Any], b: Bytes) -> str:
    """The fractions of a training step's traffic the profile runs behind compute (training.step_time.exposed_s)."""
    return (f"communication behind compute, as the profile states: TP {v['tp']:.0%}, PP {v['pp']:.0%} of their time "
            f"behind the step's compute, the DP gradient reduction {v['dp']:.0%} behind the backward, ZeRO-3/FSDP "
            f"parameter gathers {v['gather']:.0%} behind forward and backward; the rest adds to the step")


def amp(v: Mapping[str, Any], b: Bytes) -> str:
    return ("PyTorch AMP: fp32 parameters, gradients and optimizer states; autocast keeps a 16-bit copy of every "
            "linear weight from forward to backward")


def deepspeed(v: Mapping[str, Any], b: Bytes) -> str:
    return ("DeepSpeed ZeRO: 16-bit parameters and gradients, fp32 master + optimizer states (Rajbhandari et al. "
            "2020), fused optimizer (no step temporaries)")


def fp8_training(v: Mapping[str, Any], b: Bytes) -> str:
    return ("FP8 training as Transformer Engine under Megatron-LM runs it: linear-layer GEMMs at the FP8 peak, "
            "attention and elementwise kernels in bf16; bf16 parameters, fp32 gradients, master weights and "
            "optimizer states, an FP8 copy of each linear weight; saved activations counted in bf16 (TE keeps "
            "some linear inputs in FP8, so this is an upper bound); MFU against the bf16 peak")
