"""The fixed choices of the options: each an Enum whose values are what a user types (a member's name is its value
with ``-`` as ``_``)."""

from __future__ import annotations

from enum import Enum


class OutputFormat(str, Enum):
    """The one --format choice; each command takes the subset it can write (`convert.check_format`)."""

    table, json, csv, xlsx = "table", "json", "csv", "xlsx"


class Units(str, Enum):
    """Table units: decimal GB or binary GiB."""

    gb, gib = "gb", "gib"


class Logits(str, Enum):
    """Logits at the last position only, or at all."""

    last, all = "last", "all"


class Engine(str, Enum):
    """The serving engine whose start-up the estimate predicts (specs/engines/)."""

    vllm = "vllm"


class MlaCache(str, Enum):
    """MLA models: what the KV cache holds."""

    latent, decompressed = "latent", "decompressed"


class SortBy(str, Enum):
    """plan --sort."""

    cost, owned, rented, cards, throughput = "cost", "owned", "rented", "cards", "throughput"


class Mode(str, Enum):
    """Inference, or one training step."""

    infer, train = "infer", "train"


class Precision(str, Enum):
    """Training precision: fp32, automatic mixed precision over fp32 weights, 16-bit weights, FP8 GEMMs."""

    fp32, amp_bf16, amp_fp16, bf16, fp8 = "fp32", "amp-bf16", "amp-fp16", "bf16", "fp8"


class Optimizer(str, Enum):
    """Training optimizer."""

    adamw, adamw_fused, adam_8bit, sgd = "adamw", "adamw-fused", "adam-8bit", "sgd"
    sgd_momentum, adafactor, lion = "sgd-momentum", "adafactor", "lion"


class Recompute(str, Enum):
    """Activation recomputation."""

    none, selective, full = "none", "selective", "full"


class Attention(str, Enum):
    """Training attention kernel."""

    sdpa, flash, eager = "sdpa", "flash", "eager"


class Fsdp(str, Enum):
    """PyTorch FSDP sharding strategy."""

    full, grad_op = "full", "grad-op"
