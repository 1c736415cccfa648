"""Collectives over the slowest link a group crosses: exact arithmetic on the shipped systems."""

from __future__ import annotations

import pytest

from estimator.catalog.registry import Catalog
from estimator.model.collectives import (
    Link,
    all_to_all_s,
    allgather_s,
    gpu_in_group,
    group_link,
    hierarchical_allgather_s,
    hierarchical_allreduce_s,
    p2p_s,
    ring_allreduce_s,
)

LINK = Link("link", 100e9, 2e-6)  # 100 GB/s per direction, 2 µs per step


def test_ring_allreduce_is_latency_plus_bandwidth() -> None:
    # 8 GPUs, 1 GB: 2 × 7 = 14 steps × 2 µs + 14/8 × 1e9 B ÷ 1e11 B/s = 28 µs + 17.5 ms
    assert ring_allreduce_s(1e9, 8, LINK) == pytest.approx(28e-6 + 17.5e-3)
    assert ring_allreduce_s(1e9, 1, LINK) == 0.0


def test_gather_all_to_all_and_send() -> None:
    assert allgather_s(8e8, 4, LINK) == pytest.approx(3 * 2e-6 + 0.75 * 8e8 / 1e11)  # 3 steps, 3/4 of the bytes
    assert all_to_all_s(8e8, 4, LINK) == allgather_s(8e8, 4, LINK)
    assert p2p_s(1e8, LINK) == pytest.approx(2e-6 + 1e-3)


def test_hierarchical_allreduce_moves_a_shard_across_nodes() -> None:
    slow = Link("network", 50e9, 4e-6)
    # 2 × all-gather inside 8 + ring all-reduce of 1/8 of the bytes across 2
    expected = 2 * allgather_s(1e9, 8, LINK) + ring_allreduce_s(1e9 / 8, 2, slow)
    assert hierarchical_allreduce_s(1e9, 8, LINK, 2, slow) == pytest.approx(expected)
    assert hierarchical_allreduce_s(1e9, 8, LINK, 2, slow) < ring_allreduce_s(1e9, 16, slow)


def test_hierarchical_allgather_gathers_a_rail_then_the_node() -> None:
    slow = Link("network", 50e9, 4e-6)
    # across 4 nodes each GPU gathers its rail's 1/8 of 1 GB: 3 × 4 µs + 3/4 × 1.25e8 B ÷ 5e10 B/s = 1.887 ms;
    # then the node gathers the whole GB: 7 × 2 µs + 7/8 × 1e9 ÷ 1e11 = 8.764 ms
    assert hierarchical_allgather_s(1e9, 8, LINK, 4, slow) == pytest.approx(12e-6 + 1.875e-3 + 14e-6 + 8.75e-3)
    assert hierarchical_allgather_s(1e9, 8, LINK, 4, slow) < allgather_s(1e9, 32, slow)


def test_groups_cross_the_slowest_tier(shipped_catalog: Catalog) -> None:
    catalog = shipped_catalog  # the shipped servers (specs/systems) and their cards
    hgx = catalog.systems.get("hgx-h100")
    assert group_link(hgx, 8).tier == "link"
    across = group_link(hgx, 16)
    assert (across.tier, across.bytes_per_s) == ("network", 50e9)  # 8 × 400 Gb/s ÷ 8 bit ÷ 8 GPUs
    assert across.latency_s == pytest.approx(4.0e-6, rel=1e-12)  # µs → s, a float
    nvl = catalog.systems.get("pcie-h200-nvl")  # 4-way bridges, PCIe between
    assert group_link(nvl, 4).bytes_per_s == 450e9
    between = group_link(nvl, 8)
    assert (between.tier, between.bytes_per_s) == ("pcie", 64e9)
    assert group_link(catalog.systems.get("gb200-nvl72"), 72).tier == "link"
    assert group_link(catalog.systems.get("pcie-l40s"), 2).tier == "pcie"


def test_a_gpu_in_a_group_takes_the_link_it_crosses(shipped_catalog: Catalog) -> None:
    catalog = shipped_catalog  # the shipped servers (specs/systems) and their cards
    h200 = catalog.gpus.get("h200")
    hgx = catalog.systems.get("hgx-h200")
    assert gpu_in_group(h200, hgx, 2).interconnect_gb_per_s == h200.interconnect_gb_per_s == 900  # the TP 2 runs
    mi300x = catalog.gpus.get("mi300x")
    assert gpu_in_group(mi300x, catalog.systems.get("mi300x-platform"), 2).interconnect_gb_per_s == 128  # 1 of 7
