"""A checkpoint's own storage format, from the ``quantization_config`` of its config.json.

`read_quantization` turns the config block into a `CheckpointQuant`: which catalog format (specs/quant/) the
stored weights match, which tensors it covers, and the exact bits per weight of its scales. `checkpoint_format`
then builds the `NumberFormat` the estimate uses unless ``--dtype`` overrides it. Methods (field names from
transformers' quantizers, ``transformers/utils/quantization_config.py``):

- ``mxfp4`` (gpt-oss): routed experts in MXFP4; attention, router, embeddings and head stay bf16
  (its ``modules_to_not_convert``; transformers' Mxfp4HfQuantizer converts the experts only).
- ``fp8`` (DeepSeek-V3/R1, MiniMax-M2, Qwen3-FP8): FP8 E4M3 linear weights with one fp32 scale per
  ``weight_block_size`` block (128 × 128: 8 + 32 / 16,384 bits per weight).
- ``gptq`` / ``awq``: 4-bit integer weights with one scale and zero point per ``group_size``.
- ``bitsandbytes``: NF4 (double-quantized or not) with ``load_in_4bit``; int8 with ``load_in_8bit``.
- ``compressed-tensors`` and NVIDIA ``modelopt``: the first config group's weights (int4 groups, fp8, nvfp4).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from estimator.catalog.specs import MAX_GROUP_SIZE, NumberFormat
from estimator.errors import SpecInvalid

FP32_SCALE_BITS = 32  # DeepSeek's weight_scale_inv blocks are float32 (its README_WEIGHTS.md)
BF16_SCALE_BITS = 16  # compressed-tensors pack-quantized scales are stored in the checkpoint dtype (bf16)
# a group, or a block's side, is at most a row: MAX_GROUP_SIZE (2**24, architecture.MAX_WIDTH) weights
GroupSize = Annotated[int, Field(gt=0, le=MAX_GROUP_SIZE)]
BlockSide = Annotated[int, Field(gt=0, le=MAX_GROUP_SIZE)]


@dataclass(frozen=True)
class CheckpointQuant:
    """What a checkpoint stores: ``base`` names a specs/quant format; overrides refine it."""

    # stated here, not inherited: pydantic gives a plain dataclass the config of the first model that builds it,
    # so without this its schema (docs/schema/specs/model.json) depended on which model was imported first
    __pydantic_config__ = ConfigDict(extra="forbid")

    method: str
    base: str
    scope: Literal["linear", "experts"] = "linear"
    group_size: GroupSize | None = None  # a grouped format's group size (GPTQ, AWQ, compressed-tensors int4)
    block: tuple[BlockSide, BlockSide] | None = None  # FP8 block scales: rows × columns per fp32 scale
    summary: str = ""

    def __post_init__(self) -> None:
        """A config.json's group or block outside its ceiling is one line, as a spec field's would be."""
        if self.group_size is not None and not 0 < self.group_size <= MAX_GROUP_SIZE:
            raise SpecInvalid(f"quantization_config group_size {self.group_size} is outside 1..{MAX_GROUP_SIZE:,}")
        if self.block is not None and not all(0 < side <= MAX_GROUP_SIZE for side in self.block):
            raise SpecInvalid(f"quantization_config weight_block_size {list(self.block)} is outside "
                              f"1..{MAX_GROUP_SIZE:,}")

    @property
    def format_name(self) -> str:
        detail = f"-block{self.block[0]}x{self.block[1]}" if self.block else ""
        group = f"-g{self.group_size}" if self.group_size else ""
        experts = "-experts" if self.scope == "experts" else ""
        return f"checkpoint-{self.base}{detail}{group}{experts}"


def _int(q: Mapping[str, Any], *names: str, default: int | None = None) -> int:
    for name in names:
        value = q.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    if default is None:
        raise SpecInvalid(f"quantization_config lacks {names[0]!r} for quant_method {q.get('quant_method')!r}")
    return default


def _grouped(method: str, base: str, q: Mapping[str, Any]) -> CheckpointQuant:
    bits = _int(q, "bits", "w_bit", default=4)
    if bits != 4:
        raise SpecInvalid(f"quantization_config {method} with {bits}-bit weights is not modelled; give --dtype")
    group = _int(q, "group_size", "q_group_size", default=128)
    if group <= 0:  # -1: one scale per output channel; count it as one group per 4,096 inputs, a lower bound
        group = 4096
    return CheckpointQuant(method, base, group_size=group, summary=f"{method.upper()} 4-bit, groups of {group}")


def _groups(method: str, q: Mapping[str, Any]) -> CheckpointQuant:
    """compressed-tensors / modelopt: the weights of the first config group (or the quant_algo name)."""
    algo = str(q.get("quant_algo") or "").upper()
    groups = q.get("config_groups")
    first: Any = next(iter(groups.values()), {}) if isinstance(groups, Mapping) else {}
    weights: Any = first.get("weights", {}) if isinstance(first, Mapping) else {}
    weights = weights if isinstance(weights, Mapping) else {}
    bits, kind = weights.get("num_bits"), weights.get("type")
    if algo == "NVFP4" or (bits == 4 and kind == "float"):
        return CheckpointQuant(method, "nvfp4", summary="NVFP4 linear weights (FP4, an fp8 scale per 16)")
    if algo == "FP8" or (bits == 8 and kind == "float"):
        return CheckpointQuant(method, "fp8", summary="FP8 linear weights")
    if bits == 8 and kind == "int":
        return CheckpointQuant(method, "int8", summary="int8 linear weights")
    if bits == 4 and kind == "int":
        group = weights.get("group_size") or 128
        return CheckpointQuant(method, "int4", group_size=int(group), summary=f"int4 linear weights, groups of {group}")
    raise SpecInvalid(f"quantization_config {method} ({algo or f'{bits}-bit {kind}'}) is not modelled; give --dtype")


def _mxfp4(method: str, q: Mapping[str, Any]) -> CheckpointQuant:
    kept = " ".join(str(m) for m in q.get("modules_to_not_convert") or ())
    scope: Literal["linear", "experts"] = "experts" if "self_attn" in kept or not kept else "linear"
    return CheckpointQuant(method, "mxfp4", scope=scope,
                           summary="MXFP4 routed experts, bf16 rest" if scope == "experts" else "MXFP4 linear")


def _fp8(method: str, q: Mapping[str, Any]) -> CheckpointQuant:
    if q.get("config_groups") is not None:  # modelopt's FP8 export: config groups like compressed-tensors
        return _groups(method, q)
    block = q.get("weight_block_size")
    if block is None:
        return CheckpointQuant(method, "fp8", summary="FP8 linear weights, one scale per tensor")
    rows, cols = (int(b) for b in block)
    return CheckpointQuant(method, "fp8", block=(rows, cols),
                           summary=f"FP8 linear weights, an fp32 scale per {rows}×{cols} block")


def _bitsandbytes(method: str, q: Mapping[str, Any]) -> CheckpointQuant:
    if q.get("load_in_8bit"):
        return CheckpointQuant(method, "int8", summary="bitsandbytes int8 linear weights")
    double = bool(q.get("bnb_4bit_use_double_quant"))
    return CheckpointQuant(method, "nf4-dq" if double else "nf4",
                           summary=f"bitsandbytes 4-bit{' double-quantized' if double else ''} linear weights")


_READERS: dict[str, Callable[[str, Mapping[str, Any]], CheckpointQuant]] = {
    "mxfp4": _mxfp4,
    "fp8": _fp8,
    "gptq": lambda method, q: _grouped(method, "gptq-int4", q),
    "awq": lambda method, q: _grouped(method, "awq-int4", q),
    "bitsandbytes": _bitsandbytes,
    "compressed-tensors": _groups,
    "modelopt": _groups,
}


def read_quantization(q: Mapping[str, Any]) -> CheckpointQuant:
    """The storage format a ``quantization_config`` block describes (see the module docstring)."""
    method = str(q.get("quant_method") or ("modelopt" if q.get("quant_algo") else "")).lower()
    reader = _READERS.get(method)
    if reader is None:
        raise SpecInvalid(f"quantization_config quant_method {method or q.get('quant_method')!r} is not modelled; "
                          "give --dtype (e.g. --dtype bf16) to estimate it")
    return reader(method, q)


def checkpoint_format(quant: CheckpointQuant, base: NumberFormat) -> NumberFormat:
    """``base`` (the catalog format ``quant.base``) refined to what the checkpoint stores."""
    fmt = base
    if quant.group_size is not None:
        if fmt.group_size is None:  # plain int4: add a bf16 scale per group
            fmt = fmt.model_copy(update={"group_size": quant.group_size, "group_overhead_bits": BF16_SCALE_BITS,
                                         "bits_per_weight": fmt.bits_per_weight + BF16_SCALE_BITS / quant.group_size})
        else:
            fmt = fmt.with_group_size(quant.group_size)
    if quant.block is not None:
        block = quant.block[0] * quant.block[1]
        fmt = fmt.model_copy(update={"bits_per_weight": fmt.bits_per_weight + FP32_SCALE_BITS / block,
                                     "group_size": block, "group_overhead_bits": FP32_SCALE_BITS})
    return fmt.model_copy(update={"name": quant.format_name, "aliases": (), "scope": quant.scope,
                                  "description": f"{quant.summary} (the checkpoint's quantization_config)"})
