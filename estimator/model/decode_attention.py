"""The decode step's attention kernel over its cache, by its tiles (the profile's `DecodeAttentionTiles`).

A decode attention kernel holds a tile of query rows of one KV head and walks that head's cache, key block after key
block, with the head dim padded to the width the kernel was built for. Two costs follow, beside the cache's bytes
(measured on the H200's cuDNN SDPA decode kernels, docs/accuracy.md item 17): a KV head whose group has more query
heads than a tile holds is walked once per tile, the later walks partly served from L2; and a head dim that runs a
wide tile costs that tile's whole width at its lower rate (a head dim of 160 costs as 256). `walk` is the rule on one
KV head's group; `tile_reads` applies it to a model on one rank, as a factor on the time of one read of the cache at
the profile's bandwidth. The roofline bound keeps the bytes alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

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


@dataclass(frozen=True)
class TileReads:
    """One rank's decode attention: ``group`` query heads per KV head of ``head_dim``, walked as ``walk`` says."""

    group: int
    head_dim: int
    walk: Walk


def tile_reads(arch: Architecture, spec: DecodeAttentionTiles, tp: int) -> TileReads | None:
    """The walk of ``arch``'s cache on one of ``tp`` ranks (query heads split, KV heads split or replicated); None
    for latent attention, whose compressed cache another kernel reads."""
    att = arch.attention
    if att.latent is not None:
        return None
    heads, kv_heads = ceil(att.num_heads / tp), max(att.num_kv_heads // tp, 1)
    group = ceil(heads / kv_heads)
    return TileReads(group, att.head_dim, walk(group, att.head_dim, spec))


def kv_read_factor(arch: Architecture, spec: DecodeAttentionTiles | None, tp: int) -> float:
    """`tile_reads`'s factor; 1 where the profile states no tiles or the model's attention is latent."""
    reads = None if spec is None else tile_reads(arch, spec, tp)
    return 1.0 if reads is None else reads.walk.factor
