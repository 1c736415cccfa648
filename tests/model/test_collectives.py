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
    p2p_s,
    rail_ring_allgather_s,
    rail_ring_allreduce_s,
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


def test_rail_ring_allgather_is_set_by_the_slower_link() -> None:
    slow = Link("network", 50e9, 4e-6)
    # 4 nodes × 8 GPUs, 1 GB: each GPU sends 31/32 of it, 7/8 of that over the node's link and 1/8 over its NIC,
    # at once: link 31/32 × 7/8 × 1e9 ÷ 1e11 = 8.477 ms, NIC 31/32 × 1/8 × 1e9 ÷ 5e10 = 2.422 ms → 8.477 ms;
    # latency: 3 node crossings × 4 µs + the other 28 steps × 2 µs = 68 µs
    assert rail_ring_allgather_s(1e9, 8, LINK, 4, slow) == pytest.approx(68e-6 + 31 / 32 * 7 / 8 * 1e9 / 1e11)
    # a slower network (5 GB/s per GPU) sets it instead: 31/32 × 1/8 × 1e9 ÷ 5e9 = 24.22 ms
    slower = Link("network", 5e9, 4e-6)
    assert rail_ring_allgather_s(1e9, 8, LINK, 4, slower) == pytest.approx(68e-6 + 31 / 32 / 8 * 1e9 / 5e9)
    # per GPU, the network carries about 1/8 of the payload whatever the node count (n − 1)/n → 1: near flat in n
    assert rail_ring_allgather_s(1e9, 8, LINK, 8, slower) / rail_ring_allgather_s(1e9, 8, LINK, 2, slower) < 1.1
    assert rail_ring_allgather_s(1e9, 8, LINK, 4, slow) < allgather_s(1e9, 32, slow)  # a ring all over the network


def test_rail_ring_allreduce_is_a_reduce_scatter_and_an_all_gather() -> None:
    slow = Link("network", 50e9, 4e-6)
    assert rail_ring_allreduce_s(1e9, 8, LINK, 2, slow) == 2 * rail_ring_allgather_s(1e9, 8, LINK, 2, slow)
    # 2 nodes: 2 × (1 × 4 µs + 14 × 2 µs + max(15/16 × 7/8 × 1e9 ÷ 1e11, 15/16 × 1/8 × 1e9 ÷ 5e10))
    assert rail_ring_allreduce_s(1e9, 8, LINK, 2, slow) == pytest.approx(2 * (32e-6 + 15 / 16 * 7 / 8 * 1e-2))
    assert rail_ring_allreduce_s(1e9, 8, LINK, 2, slow) < ring_allreduce_s(1e9, 16, slow)


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
