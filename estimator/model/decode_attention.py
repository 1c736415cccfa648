"""The decode step's attention kernel over its cache, by its tiles (the profile's `DecodeAttentionTiles`).

A decode attention kernel holds a tile of query rows of one KV head and walks that head's cache, key block after key
block, with the head dim padded to the width the kernel was built for. Two costs follow, beside the cache's bytes
(measured on the H200's cuDNN SDPA decode kernels, docs/accuracy.md, "Decode attention kernels"): a KV head whose group
has more query heads than a tile holds is walked once per tile, the later walks partly served from L2; and a head dim
that runs a wide tile costs that tile's whole width at its lower rate (a head dim of 160 costs as 256). `walk` is the
rule on one KV head's group; `tile_reads` applies it to a model on one rank, as a factor on the time of one read of the
cache at the profile's bandwidth. The roofline bound keeps the bytes alone.

transformers' static-cache decode (the `hf` profiles, `repeats_kv`) hands SDPA a mask, so a grouped-query model's KV
heads reach the kernel repeated per query head (`repeat_kv`, docs/accuracy.md, "Decode attention kernels"): each query
head is a KV head of its own there, walked by one tile. Several KV heads are copied, so the kernel reads the group's
copies whole; one KV head is a view of stride 0, whose further walks cost part of the first, as a further tile's do.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import Literal

from estimator.catalog.architecture import Architecture
from estimator.catalog.profiles import DecodeAttentionTiles


@dataclass(frozen=True)
class Walk:
    """How the kernel walks one KV head's cache: ``tiles`` query-row tiles, the head dim run at ``tile_head_dim``
    (``full_width``: at that whole width and the full-width rate); ``factor`` multiplies one read's time."""

    tiles: int
    tile_head_dim: int
    full_width: bool
    factor: float


def walk(group: int, head_dim: int, spec: DecodeAttentionTiles) -> Walk:
    """The rule for ``group`` query heads sharing one KV head of ``head_dim``: a head dim wider than every tile runs at
    its own width."""
    tiles = ceil(group / spec.query_rows)
    tile = next((width for width in spec.head_dims if width >= head_dim), head_dim)
    full = spec.full_width_from is not None and tile >= spec.full_width_from
    width = tile / head_dim / spec.full_width_efficiency if full else 1.0
    return Walk(tiles, tile, full, width * (1 + (tiles - 1) * spec.reread_fraction))


Repeat = Literal["copy", "view"]


@dataclass(frozen=True)
class TileReads:
    """One rank's decode attention: ``group`` query heads per KV head of ``head_dim``, walked as ``walk`` says; where
    the runtime repeats the KV heads (``repeat``: copied, or viewed for one KV head), ``walk`` is one query head's and
    ``factor`` what the group's walks cost over one read of the cache."""

    group: int
    head_dim: int
    walk: Walk
    repeat: Repeat | None
    factor: float


def repeated(group: int, kv_heads: int, head_dim: int, spec: DecodeAttentionTiles) -> TileReads:
    """The group's walks where each query head reaches the kernel as a KV head of its own: copies read whole, or one
    KV head's view whose further walks cost ``reread_fraction`` of the first."""
    one = walk(1, head_dim, spec)
    if kv_heads > 1:
        return TileReads(group, head_dim, one, "copy", one.factor * group)
    return TileReads(group, head_dim, one, "view", one.factor * view_walks(group, spec))


def view_walks(group: int, spec: DecodeAttentionTiles) -> float:
    """What ``group`` walks of one viewed KV head cost in first walks: the first, and ``reread_fraction`` of each
    further one."""
    return 1 + (group - 1) * spec.reread_fraction


def rank_group(arch: Architecture, tp: int) -> tuple[int, int]:
    """(query heads per KV head, KV heads) on one of ``tp`` ranks: query heads split, KV heads split or
    replicated."""
    att = arch.attention
    heads, kv_heads = ceil(att.num_heads / tp), max(att.num_kv_heads // tp, 1)
    return ceil(heads / kv_heads), kv_heads


def tile_reads(arch: Architecture, spec: DecodeAttentionTiles, tp: int, repeats_kv: bool = False) -> TileReads | None:
    """The walk of ``arch``'s cache on one of ``tp`` ranks (``repeats_kv``: the runtime repeats grouped KV heads per
    query head first); None for latent attention, whose compressed cache another kernel reads."""
    att = arch.attention
    if att.latent is not None:
        return None
    group, kv_heads = rank_group(arch, tp)
    if repeats_kv and group > 1:
        return repeated(group, kv_heads, att.head_dim, spec)
    found = walk(group, att.head_dim, spec)
    return TileReads(group, att.head_dim, found, None, found.factor)


def kv_read_factor(arch: Architecture, spec: DecodeAttentionTiles | None, tp: int, repeats_kv: bool = False) -> float:
    """`tile_reads`'s factor; 1 where the profile states no tiles or the model's attention is latent."""
    reads = None if spec is None else tile_reads(arch, spec, tp, repeats_kv)
    return 1.0 if reads is None else reads.factor


def repeat_kv_copies(arch: Architecture, tp: int, repeats_kv: bool) -> int:
    """How many copies of each cached KV element the runtime writes before the decode's attention: the group where it
    repeats several KV heads per query head, 0 where it copies nothing (one KV head is a view; no groups; no repeat)."""
    if not repeats_kv or arch.attention.latent is not None:
        return 0
    group, kv_heads = rank_group(arch, tp)
    return group if kv_heads > 1 and group > 1 else 0


def shares_view(arch: Architecture, tp: int, repeats_kv: bool) -> bool:
    """Whether the runtime hands one KV head on a rank to several query heads as a view (repeat_kv's stride 0)."""
    group, kv_heads = rank_group(arch, tp)
    return repeats_kv and arch.attention.latent is None and kv_heads == 1 and group > 1


def walk_streams(arch: Architecture, tp: int, batch: int, repeats_kv: bool) -> float:
    """The thread blocks of a decode's one-query-per-block attention kernel that read distinct memory, per layer on one
    rank (`timing.cache_attention_s`): one per (sequence, query head), but where the runtime hands one KV head to every
    query head as a view, one per (sequence, KV head) — the view's further blocks read what the first brought into L2
    (docs/accuracy.md, "Decode attention kernels")."""
    return batch * (1 if shares_view(arch, tp, repeats_kv) else arch.attention.num_heads / tp)
