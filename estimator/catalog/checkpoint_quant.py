"""A checkpoint's own storage format, from the ``quantization_config`` of its config.json or NVIDIA ModelOpt's
``hf_quant_config.json``.

`read_quantization` turns the config block into a `CheckpointQuant`: which catalog format (specs/quant/) the
stored weights match, the exact bits per weight of its scales, and which modules it leaves unquantized
(``kept``) or stores in another format (``modules``, a ModelOpt MIXED_PRECISION checkpoint's per-module map).
`checkpoint_format` then builds the `NumberFormat` the estimate uses unless ``--dtype`` overrides it, and
`estimator.model.modules` resolves the module patterns against the tensor inventory. Methods (field names from
transformers' quantizers, ``transformers/utils/quantization_config.py``):

- ``mxfp4`` (gpt-oss): MXFP4 linear weights except ``modules_to_not_convert`` (attention, router, embeddings
  and head): the routed experts.
- ``fp8`` (DeepSeek-V3/R1, Kimi-K2, MiniMax-M2, Devstral 2): FP8 E4M3 linear weights, one fp32 scale per
  ``weight_block_size`` block (128 × 128: 8 + 32 / 16,384 bits per weight) or per tensor; ``modules_to_not_convert``
  (or ``ignored_layers``) stay 16-bit.
- ``gptq`` / ``awq``: 4-bit integer weights with one scale and zero point per ``group_size``.
- ``bitsandbytes``: NF4 (double-quantized or not) with ``load_in_4bit``; int8 with ``load_in_8bit``;
  ``llm_int8_skip_modules`` stay 16-bit.
- ``compressed-tensors`` and NVIDIA ``modelopt``: the first config group's weights (int4 groups, fp8, nvfp4),
  ``ignore`` / ``exclude_modules`` stay 16-bit; a MIXED_PRECISION checkpoint's ``quantized_layers`` give each
  module its own format and leave every other module 16-bit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from estimator.catalog.specs import MAX_GROUP_SIZE, NumberFormat
from estimator.errors import SpecInvalid

FP32_SCALE_BITS = 32  # DeepSeek's weight_scale_inv blocks are float32 (its README_WEIGHTS.md)
BF16_SCALE_BITS = 16  # compressed-tensors pack-quantized scales are stored in the checkpoint dtype (bf16)
# a group, or a block's side, is at most a row: MAX_GROUP_SIZE (2**24, architecture.MAX_WIDTH) weights
GroupSize = Annotated[int, Field(gt=0, le=MAX_GROUP_SIZE)]
BlockSide = Annotated[int, Field(gt=0, le=MAX_GROUP_SIZE)]
MAX_PATTERNS = 100_000  # module patterns one checkpoint lists (DeepSeek-V3.1-NVFP4 excludes 245 modules)
Pattern = Annotated[str, Field(max_length=1_000)]

# ModelOpt's per-module algorithms (modelopt/torch/export/model_config.py QUANTIZATION_*; vLLM's
# ModelOptMixedPrecisionConfig reads the same names) → (catalog format, fp32-scaled block of FP8_PB_WO)
MODELOPT_ALGOS: dict[str, tuple[str, tuple[int, int] | None]] = {
    "FP8": ("fp8", None),
    "FP8_PER_CHANNEL_PER_TOKEN": ("fp8", None),
    "FP8_PB_WO": ("fp8", (128, 128)),  # FP8 weights with one fp32 scale per 128 × 128 block
    "NVFP4": ("nvfp4", None),
    "W4A16_NVFP4": ("nvfp4", None),
    "NVFP4_AWQ": ("nvfp4", None),
}


@dataclass(frozen=True)
class CheckpointQuant:
    """What a checkpoint stores: ``base`` names a specs/quant format; overrides refine it; ``kept`` and ``modules``
    say which modules it covers."""

    # stated here, not inherited: pydantic gives a plain dataclass the config of the first model that builds it,
    # so without this its schema (docs/schema/specs/model.json) depended on which model was imported first
    __pydantic_config__ = ConfigDict(extra="forbid")

    method: str
    base: str
    group_size: GroupSize | None = None  # a grouped format's group size (GPTQ, AWQ, compressed-tensors int4)
    block: tuple[BlockSide, BlockSide] | None = None  # FP8 block scales: rows × columns per fp32 scale
    summary: str = ""
    # module names or patterns the checkpoint leaves unquantized, as it spells them (modules_to_not_convert,
    # ignore, exclude_modules, ignored_layers, llm_int8_skip_modules; "re:" marks a regular expression)
    kept: Annotated[tuple[Pattern, ...], Field(max_length=MAX_PATTERNS)] = ()
    # a MIXED_PRECISION checkpoint: (module, ModelOpt algorithm) for every quantized module; the rest is 16-bit
    modules: Annotated[tuple[tuple[Pattern, str], ...], Field(max_length=MAX_PATTERNS)] = ()

    def __post_init__(self) -> None:
        """A config.json's group or block outside its ceiling is one line, as a spec field's would be."""
        if self.group_size is not None and not 0 < self.group_size <= MAX_GROUP_SIZE:
            raise SpecInvalid(f"quantization_config group_size {self.group_size} is outside 1..{MAX_GROUP_SIZE:,}")
        if self.block is not None and not all(0 < side <= MAX_GROUP_SIZE for side in self.block):
            raise SpecInvalid(f"quantization_config weight_block_size {list(self.block)} is outside "
                              f"1..{MAX_GROUP_SIZE:,}")
        if len(self.kept) > MAX_PATTERNS or len(self.modules) > MAX_PATTERNS:
            raise SpecInvalid(f"quantization_config lists more than {MAX_PATTERNS:,} modules")

    @property
    def format_name(self) -> str:
        detail = f"-block{self.block[0]}x{self.block[1]}" if self.block else ""
        group = f"-g{self.group_size}" if self.group_size else ""
        mixed = "-mixed" if self.modules else ""
        return f"checkpoint-{self.base}{detail}{group}{mixed}"


def _int(q: Mapping[str, Any], *names: str, default: int | None = None) -> int:
    for name in names:
        value = q.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    if default is None:
        raise SpecInvalid(f"quantization_config lacks {names[0]!r} for quant_method {q.get('quant_method')!r}")
    return default


def _patterns(q: Mapping[str, Any], *names: str) -> tuple[str, ...]:
    """The module names a checkpoint keeps unquantized, under whichever key its method uses."""
    found: list[str] = []
    for name in names:
        value = q.get(name)
        if isinstance(value, str):
            value = [value]
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise SpecInvalid(f"quantization_config {name} must be a list of module names")
        found += [v for v in value or () if v not in found]
    return tuple(found)


def _kept_words(kept: tuple[str, ...]) -> str:
    if not kept:
        return ""
    shown = ", ".join(kept[:4]) + (f" and {len(kept) - 4:,} more" if len(kept) > 4 else "")
    return f"; kept 16-bit: {shown}"


def _grouped(method: str, base: str, q: Mapping[str, Any]) -> CheckpointQuant:
    bits = _int(q, "bits", "w_bit", default=4)
    if bits != 4:
        raise SpecInvalid(f"quantization_config {method} with {bits}-bit weights is not modelled; give --dtype")
    group = _int(q, "group_size", "q_group_size", default=128)
    if group <= 0:  # -1: one scale per output channel; count it as one group per 4,096 inputs, a lower bound
        group = 4096
    kept = _patterns(q, "modules_to_not_convert")
    return CheckpointQuant(method, base, group_size=group, kept=kept,
                           summary=f"{method.upper()} 4-bit, groups of {group}{_kept_words(kept)}")


def _mixed(method: str, q: Mapping[str, Any], kept: tuple[str, ...]) -> CheckpointQuant:
    """ModelOpt MIXED_PRECISION: each module of ``quantized_layers`` in its own algorithm, the rest 16-bit."""
    layers = q.get("quantized_layers")
    if not isinstance(layers, Mapping) or not layers:
        raise SpecInvalid("quantization_config MIXED_PRECISION lacks its quantized_layers map; give --dtype")
    modules = []
    for name, entry in layers.items():
        algo = str(entry.get("quant_algo") if isinstance(entry, Mapping) else entry).upper()
        if algo not in MODELOPT_ALGOS:
            raise SpecInvalid(f"quantization_config quantized_layers {name!r}: quant_algo {algo!r} is not modelled; "
                              "give --dtype")
        modules.append((str(name), algo))
    algos = sorted({a for _, a in modules})
    base = MODELOPT_ALGOS[max(algos, key=lambda a: sum(1 for _, x in modules if x == a))][0]
    return CheckpointQuant(method, base, kept=kept, modules=tuple(modules),
                           summary=f"mixed precision: {len(modules):,} modules in {', '.join(algos)}, the rest "
                                   f"16-bit{_kept_words(kept)}")


def _groups(method: str, q: Mapping[str, Any]) -> CheckpointQuant:
    """compressed-tensors / modelopt: the weights of the first config group (or the quant_algo name)."""
    algo = str(q.get("quant_algo") or "").upper()
    kept = _patterns(q, "ignore", "exclude_modules")
    if algo == "MIXED_PRECISION":
        return _mixed(method, q, kept)
    groups = q.get("config_groups")
    first: Any = next(iter(groups.values()), {}) if isinstance(groups, Mapping) else {}
    weights: Any = first.get("weights", {}) if isinstance(first, Mapping) else {}
    weights = weights if isinstance(weights, Mapping) else {}
    bits, kind, words = weights.get("num_bits"), weights.get("type"), _kept_words(kept)
    if algo == "NVFP4" or (bits == 4 and kind == "float"):
        return CheckpointQuant(method, "nvfp4", kept=kept, summary=f"NVFP4 linear weights (FP4, an fp8 scale per "
                                                                    f"16){words}")
    if algo in ("FP8", "FP8_PER_CHANNEL_PER_TOKEN") or (bits == 8 and kind == "float"):
        return CheckpointQuant(method, "fp8", kept=kept, summary=f"FP8 linear weights{words}")
    if bits == 8 and kind == "int":
        return CheckpointQuant(method, "int8", kept=kept, summary=f"int8 linear weights{words}")
    if bits == 4 and kind == "int":
        group = weights.get("group_size") or 128
        return CheckpointQuant(method, "int4", group_size=int(group), kept=kept,
                               summary=f"int4 linear weights, groups of {group}{words}")
    raise SpecInvalid(f"quantization_config {method} ({algo or f'{bits}-bit {kind}'}) is not modelled; give --dtype")


def _mxfp4(method: str, q: Mapping[str, Any]) -> CheckpointQuant:
    kept = _patterns(q, "modules_to_not_convert")
    return CheckpointQuant(method, "mxfp4", kept=kept, summary=f"MXFP4 linear weights{_kept_words(kept)}")


def _fp8(method: str, q: Mapping[str, Any]) -> CheckpointQuant:
    if q.get("config_groups") is not None:  # modelopt's FP8 export: config groups like compressed-tensors
        return _groups(method, q)
    kept = _patterns(q, "modules_to_not_convert", "ignored_layers")
    block = q.get("weight_block_size")
    if block is None:
        return CheckpointQuant(method, "fp8", kept=kept,
                               summary=f"FP8 linear weights, one scale per tensor{_kept_words(kept)}")
    rows, cols = (int(b) for b in block)
    return CheckpointQuant(method, "fp8", block=(rows, cols), kept=kept,
                           summary=f"FP8 linear weights, an fp32 scale per {rows}×{cols} block{_kept_words(kept)}")


def _bitsandbytes(method: str, q: Mapping[str, Any]) -> CheckpointQuant:
    kept = _patterns(q, "llm_int8_skip_modules", "modules_to_not_convert")
    if q.get("load_in_8bit"):
        return CheckpointQuant(method, "int8", kept=kept,
                               summary=f"bitsandbytes int8 linear weights{_kept_words(kept)}")
    double = bool(q.get("bnb_4bit_use_double_quant"))
    return CheckpointQuant(method, "nf4-dq" if double else "nf4", kept=kept,
                           summary=f"bitsandbytes 4-bit{' double-quantized' if double else ''} linear weights"
                                   f"{_kept_words(kept)}")


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


def read_hf_quant_config(mapping: Mapping[str, Any]) -> CheckpointQuant:
    """The storage format NVIDIA ModelOpt's ``hf_quant_config.json`` describes: ``{"producer": {"name":
    "modelopt", ...}, "quantization": {"quant_algo", "kv_cache_quant_algo", "group_size", "exclude_modules",
    "quantized_layers"}}`` (a local folder's file, or the Hub's, parsed)."""
    quantization = mapping.get("quantization")
    if not isinstance(quantization, Mapping):
        raise SpecInvalid("hf_quant_config.json has no 'quantization' mapping")
    if not quantization.get("quant_algo"):
        raise SpecInvalid("hf_quant_config.json quantization has no quant_algo (weights not quantized?); "
                          "give --dtype")
    quant = _groups("modelopt", quantization)
    return replace(quant, summary=f"{quant.summary}, as its hf_quant_config.json says")


def checkpoint_format(quant: CheckpointQuant, base: NumberFormat) -> NumberFormat:
    """``base`` (the catalog format ``quant.base``) refined to what the checkpoint stores: a linear-layer format
    whose module exclusions `estimator.model.modules` applies."""
    fmt = refined(base, quant.group_size, quant.block)
    return fmt.model_copy(update={"name": quant.format_name, "aliases": (), "scope": "linear",
                                  "description": f"{quant.summary} (the checkpoint's quantization_config)"})


def refined(fmt: NumberFormat, group_size: int | None, block: tuple[int, int] | None) -> NumberFormat:
    """``fmt`` with a checkpoint's group size, or FP8 block scales (an fp32 scale per rows × columns block)."""
    if group_size is not None:
        if fmt.group_size is None:  # plain int4: add a bf16 scale per group
            fmt = fmt.model_copy(update={"group_size": group_size, "group_overhead_bits": BF16_SCALE_BITS,
                                         "bits_per_weight": fmt.bits_per_weight + BF16_SCALE_BITS / group_size})
        else:
            fmt = fmt.with_group_size(group_size)
    if block is not None:
        size = block[0] * block[1]
        fmt = fmt.model_copy(update={"bits_per_weight": fmt.bits_per_weight + FP32_SCALE_BITS / size,
                                     "group_size": size, "group_overhead_bits": FP32_SCALE_BITS})
    return fmt


def module_formats(quant: CheckpointQuant, formats: Callable[[str], NumberFormat]) -> tuple[tuple[str, NumberFormat],
                                                                                            ...]:
    """(module, format) for each module a MIXED_PRECISION checkpoint quantizes; ``formats`` finds a catalog
    format by name."""
    return tuple((name, refined(formats(MODELOPT_ALGOS[algo][0]), None, MODELOPT_ALGOS[algo][1]))
                 for name, algo in quant.modules)
