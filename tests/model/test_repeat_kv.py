"""transformers' repeat_kv before a masked decode's attention (`estimator.model.decode_attention.repeated`, the `hf`
profiles' `repeat_kv_elements_per_s`, docs/accuracy.md, "Decode attention kernels"): exact factors, copies and pair
shares, the copy's time, and the decode step and note of a grouped-query model under the `hf-graph` profile."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator import default_catalog
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload
from estimator.model.decode_attention import kv_read_factor, repeat_kv_copies, tile_reads, walk_streams
from estimator.model.timing import PhaseCost, repeat_kv_s

# the tiles' round figures and the small llama of the tiles' own tests (every factor exact in binary floating point)
from tests.model.test_decode_attention import TILES, _arch


@pytest.mark.parametrize(("heads", "kv_heads", "head_dim", "tp", "repeat", "factor", "copies", "streams"), [
    (32, 8, 128, 1, "copy", 4.0, 4, 32),  # llama-3.1-8b: 4 copies, each read whole at the narrow tile
    (16, 8, 256, 1, "copy", 4.0, 2, 16),  # gemma-2: 2 copies at the wide tile's rate (2 ×)
    (16, 16, 160, 1, None, 3.2, 0, 16),  # as many KV heads as query heads: nothing repeated, the tile's rule
    (46, 1, 256, 1, "view", 47.0, 0, 1),  # one KV head: a view; 1 + 45 × 0.5 walks at 2 ×, no copy
    (8, 1, 128, 1, "view", 4.5, 0, 1),  # 1 + 7 × 0.5
    (64, 8, 128, 4, "copy", 8.0, 8, 16),  # tensor parallel 4: 16 query heads over 2 KV heads on a rank
    (64, 2, 128, 4, "view", 8.5, 0, 1),  # KV heads replicated: one per rank, viewed by its 16 query heads
])
def test_repeated_heads_are_copies_read_whole_or_a_view(heads: int, kv_heads: int, head_dim: int, tp: int,
                                                       repeat: str | None, factor: float, copies: int,
                                                       streams: int) -> None:
    arch = _arch(heads, kv_heads, head_dim)
    reads = tile_reads(arch, TILES, tp, repeats_kv=True)
    assert reads is not None
    assert (reads.repeat, reads.factor, reads.walk.tiles) == (repeat, factor, 1 if repeat else reads.walk.tiles)
    assert kv_read_factor(arch, TILES, tp, repeats_kv=True) == factor
    assert repeat_kv_copies(arch, tp, repeats_kv=True) == copies
    # the fp32 walk's blocks that read distinct memory, per sequence: a view's query heads share its one KV head's
    assert walk_streams(arch, tp, 3, repeats_kv=True) == 3 * streams
    # without the runtime's repeat: the kernel gets the cached heads, nothing is copied, every query head reads anew
    assert repeat_kv_copies(arch, tp, repeats_kv=False) == 0
    assert walk_streams(arch, tp, 3, repeats_kv=False) == 3 * heads / tp


@given(st.integers(1, 8), st.integers(2, 64), st.sampled_from((64, 80, 96, 128, 160, 256)), st.floats(0.0, 1.0))
def test_a_view_never_costs_more_than_copies_and_copies_cost_the_group(kv_heads: int, group: int, head_dim: int,
                                                                      reread: float) -> None:
    tiles = TILES.model_copy(update={"reread_fraction": reread})
    one = kv_read_factor(_arch(kv_heads, kv_heads, head_dim), tiles, 1, repeats_kv=True)
    copies = kv_read_factor(_arch(2 * group, 2, head_dim), tiles, 1, repeats_kv=True)
    view = kv_read_factor(_arch(group, 1, head_dim), tiles, 1, repeats_kv=True)
    assert copies == pytest.approx(group * one, rel=1e-12)
    assert one <= view <= copies + 1e-12


def test_the_copy_is_its_written_elements_at_the_dtype_rate() -> None:
    hf = default_catalog().profiles.get("hf")
    assert hf.repeat_kv_elements_per_s == (4.81e11, 3.80e11)
    half = PhaseCost(0, 0, 0, 0, 0, 1, kv_copy_elements=4.81e9)
    full = PhaseCost(0, 0, 0, 0, 0, 1, fp32=True, kv_copy_elements=3.80e9)
    assert (repeat_kv_s(half, hf), repeat_kv_s(full, hf)) == (0.01, 0.01)
    optimized = default_catalog().profiles.get("optimized")
    assert not optimized.repeats_kv and repeat_kv_s(half, optimized) == 0


def _decode(model: str, profile: str, batch: int = 16, context: int = 1024) -> Any:
    catalog = default_catalog()
    fmt = catalog.formats.get("bf16")
    workload = InferenceWorkload(batch=batch, prompt_tokens=context - 1, output_tokens=1, weight_format=fmt,
                                 kv_format=fmt, profile=catalog.profiles.get(profile))
    return estimate(catalog.models.get(model), catalog.gpus.get("h200"), workload)


def test_a_grouped_query_graph_decode_reads_its_copies_and_writes_them_first() -> None:
    """llama-3.1-8b at batch 16 × 1,024 under hf-graph: its 2.1 GB cache's 4 copies read at the profile's bandwidth,
    and written first at 4.81e11 elements a second, against the same step with the kernel given the cached heads."""
    catalog = default_catalog()
    graph = catalog.profiles.get("hf-graph")
    report = _decode("llama-3.1-8b", "hf-graph")
    plain = graph.model_copy(update={"repeat_kv_elements_per_s": None})
    fmt = catalog.formats.get("bf16")
    workload = InferenceWorkload(batch=16, prompt_tokens=1023, output_tokens=1, weight_format=fmt, kv_format=fmt,
                                 profile=plain)
    unrepeated = estimate(catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h200"), workload)
    kv = report.memory.kv_cache_per_gpu_bytes
    read = kv / (catalog.gpus.get("h200").bandwidth_bytes_per_s * graph.bandwidth_efficiency)
    copy = kv / 2 * 4 / 4.81e11
    assert report.time.decode_step_s - unrepeated.time.decode_step_s == pytest.approx(3 * read + copy, rel=1e-9)
    assert report.time.decode_step_bound_s == unrepeated.time.decode_step_bound_s
    (note,) = [n.values for n in report.assumptions if n.code.value == "decode-attention"]
    assert (note["repeat"], note["group"], note["factor"]) == ("copy", 4, 4.0)
