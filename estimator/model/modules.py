"""Which tensors a checkpoint's format covers: its module exclusions and per-module formats, resolved against the
tensor inventory layer by layer.

A quantized checkpoint names modules, not roles: gpt-oss keeps ``model.layers.*.self_attn``, the router, the
embeddings and ``lm_head`` in bf16 (its ``modules_to_not_convert``), so MXFP4 covers the routed experts alone;
Kimi-K2.5 ignores ``re:.*self_attn.*``, the shared experts and the dense MLP (compressed-tensors ``ignore``);
NVIDIA's DeepSeek-V3.1-NVFP4 excludes four attention projections of every layer but not ``o_proj``; a ModelOpt
MIXED_PRECISION checkpoint gives each module of its ``quantized_layers`` its own algorithm. Each pattern is read
once into a `Rule` — the layer it names (``layers.N``), the role its module has (`tensor_role`, which knows
Hugging Face and GGUF spellings, so ``block_sparse_moe.gate`` and ``mlp.router`` are both the router), and the
projection it names where the inventory has that name — and every tensor group of the inventory, in every layer
it spans, takes the first per-module format that matches, else 16 bits where a kept pattern matches, else the
checkpoint's format (linear layers) — or 16 bits in a mixed checkpoint, which lists every module it quantizes.

The result is the bytes of each role, Σ numel × bits / 8 rounded up once per role and format, carried by the
format as ``stored_roles`` (as a checkpoint's file headers are): every weight figure reads them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from estimator.catalog.architecture import Architecture
from estimator.catalog.checkpoint_files import tensor_role
from estimator.catalog.specs import NumberFormat
from estimator.model.inventory import Role, TensorGroup, tensor_inventory
from estimator.model.memory import SIXTEEN_BIT, bytes_of, tensor_bits

_LAYER = re.compile(r"layers\.(\d+)(?!\d)")
_WRAPPERS = re.compile(r"^((model|language_model|backbone|transformer|text_model)\.)+")
_WORD = re.compile(r"^\w+$")
_MOE_NAMES = (".mlp.experts", ".mlp.shared_experts", ".mlp.gate.", ".mlp.shared_expert_gate")
_NEVER_QUANTIZED = (Role.NORM, Role.BIAS, Role.SSM, Role.POSITION)
# a checkpoint's projection names that the inventory spells otherwise (the checkpoints' own tensor names): Qwen3.5's
# gated DeltaNet splits the inventory's in_proj_qkvz and in_proj_ba (NVIDIA's Qwen3.6-35B-A3B-NVFP4 map names
# in_proj_qkv and in_proj_z), MiniMax-M2's experts are w1 / w3 / w2 (block_sparse_moe.experts.N.w1), gpt-oss and
# Phi-3 fuse gate and up in one gate_up_proj
SPELLINGS: dict[str, tuple[str, ...]] = {
    "in_proj_qkv": ("in_proj_qkvz",), "in_proj_z": ("in_proj_qkvz",), "in_proj_b": ("in_proj_ba",),
    "in_proj_a": ("in_proj_ba",), "w1": ("gate_proj",), "w3": ("up_proj",), "w2": ("down_proj",),
    "gate_up_proj": ("gate_proj", "up_proj"),
}


@dataclass(frozen=True)
class Rule:
    """One module pattern, read: the layer it names (None: every layer), the role of its module (None: a whole
    layer, or a bare name), the last name it spells (a projection such as ``kv_b_proj``), and the pattern."""

    layer: int | None
    role: str | None
    leaf: str | None
    pattern: str


@cache
def rule(pattern: str) -> Rule:
    """A checkpoint's module pattern (a name, a ``*`` glob, or an ``re:`` expression) read into a `Rule`."""
    text = pattern[3:] if pattern.startswith("re:") else pattern
    layer = _LAYER.search(text)
    text = re.sub(r"\.+", ".", text.replace("\\", "").replace(".*", ".").replace("*", "").replace("$", ""))
    core = _WRAPPERS.sub("", _LAYER.sub("layers.N", text).strip(".")).strip(".")
    rest = re.sub(r"^layers\.N\.?", "", core)
    leaf = rest.rsplit(".", 1)[-1] if rest and _WORD.match(rest.rsplit(".", 1)[-1]) else None
    role = tensor_role(f"{core}.weight") if rest else None
    return Rule(int(layer[1]) if layer else None, None if role == "other" else role, leaf, pattern)


def _components(group: TensorGroup) -> set[str]:
    return set(re.sub(r"\[\d+\]", "", group.name).split("."))


def _layers(arch: Architecture, group: TensorGroup) -> list[int] | None:
    """The layers a per-layer tensor group spans, in order; None where the inventory does not place it."""
    if not group.name.startswith("layers."):
        return None
    n, name = arch.num_layers, group.name
    if any(part in name for part in _MOE_NAMES):
        found = [i for i in range(n) if arch.is_moe_layer(i)]
    elif ".mlp" in name:
        width = re.search(r"\.mlp\[(\d+)\]", name)
        found = [i for i in range(n) if arch.has_dense_mlp(i) and (width is None or arch.mlp_width(i) == int(width[1]))]
    elif ".self_attn." in name and ".linear_attn." not in name:
        found = [i for i in range(n) if arch.mixer(i) == "attention"]
    elif ".cross_attn" in name:
        found = [i for i in range(n) if arch.mixer(i) == "cross_attention"]
    else:
        found = [i for i in range(n) if arch.mixer(i) not in ("attention", "cross_attention", "none")]
        found = found if found and group.count % len(found) == 0 else list(range(n))
    return found if found and group.count % len(found) == 0 else None


def _placed(rules: Sequence[Rule], inventory: Sequence[TensorGroup]) -> list[Rule]:
    """Rules whose projection name the inventory spells keep it (or its inventory spelling, `SPELLINGS`); the
    others match their whole role (a checkpoint spells ``shared_expert`` where the inventory says
    ``shared_experts``). A bare name no group has places nowhere (``mtp.*``: the multi-token-prediction layer the
    inventory does not count)."""
    out = []
    for read in rules:
        pool = [g for g in inventory if read.role is None or g.role.value == read.role]
        spelled = set().union(*(_components(g) for g in pool)) if pool else set()
        if read.leaf is None or read.leaf in spelled:
            placed = [read]
        else:
            leaves = [leaf for leaf in SPELLINGS.get(read.leaf, ()) if leaf in spelled]
            placed = [Rule(read.layer, read.role, leaf, read.pattern) for leaf in leaves]
            if not placed and read.role is not None:
                placed = [Rule(read.layer, read.role, None, read.pattern)]
        out += [r for r in placed if not (r.role is None and r.leaf is None and r.layer is None)]
    return out


def _matches(r: Rule, group: TensorGroup, layer: int | None) -> bool:
    return ((r.layer is None or r.layer == layer) and (r.role is None or r.role == group.role.value)
            and (r.leaf is None or r.leaf in _components(group)))


@dataclass(frozen=True)
class _Resolver:
    kept: list[Rule]
    modules: list[tuple[Rule, Fraction]]
    default: NumberFormat | None

    def bits(self, group: TensorGroup, layer: int | None) -> Fraction:
        if group.role not in _NEVER_QUANTIZED:
            for r, bits in self.modules:
                if _matches(r, group, layer):
                    return bits
        if any(_matches(r, group, layer) for r in self.kept):
            return SIXTEEN_BIT
        return SIXTEEN_BIT if self.default is None else tensor_bits(group.role, self.default)


def module_roles(arch: Architecture, kept: Sequence[str], modules: Sequence[tuple[str, NumberFormat]],
                 default: NumberFormat | None) -> tuple[tuple[str, int, int], ...]:
    """(role, elements, bytes) of every role of ``arch`` under a checkpoint that keeps the ``kept`` modules 16-bit,
    stores ``modules`` in their own formats and every other linear weight in ``default`` (None: 16-bit)."""
    inventory = tensor_inventory(arch)
    placed = [(r, Fraction(str(f.bits_per_weight))) for p, f in modules for r in _placed([rule(p)], inventory)]
    resolver = _Resolver(_placed([rule(p) for p in kept], inventory), placed, default)
    per_layer = any(r.layer is not None for r in resolver.kept) or any(r.layer is not None for r, _ in
                                                                       resolver.modules)
    numel: dict[str, dict[Fraction, int]] = {}
    for group in inventory:
        shares = numel.setdefault(group.role.value, {})
        layers = _layers(arch, group) if per_layer else None
        if layers is None:
            bits = resolver.bits(group, None)
            shares[bits] = shares.get(bits, 0) + group.total
            continue
        each = group.total // len(layers)
        for layer in layers:
            bits = resolver.bits(group, layer)
            shares[bits] = shares.get(bits, 0) + each
    return tuple((role, sum(s.values()), sum(bytes_of(n, b) for b, n in s.items())) for role, s in numel.items()
                 if sum(s.values()))


def module_format(arch: Architecture, fmt: NumberFormat, kept: Sequence[str],
                  modules: Sequence[tuple[str, NumberFormat]], *, mixed: bool) -> NumberFormat:
    """``fmt`` (a checkpoint's format) carrying the bytes of each role as its module patterns resolve them."""
    roles = module_roles(arch, kept, modules, None if mixed else fmt)
    return fmt.model_copy(update={"stored_roles": roles})
