"""--network NICSxGBIT[-KIND] replaces a system's scale-out network."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from estimator.catalog.registry import Catalog
from estimator.catalog.systems import with_network
from estimator.errors import FieldInvalid
from estimator.request.options import flag_of
from tests.conftest import CliResult


def test_network_is_replaced(catalog: Catalog) -> None:
    h100 = catalog.systems.get("hgx-h100")
    slow = with_network(h100, "2x100g-eth")
    assert (slow.nics_per_node, slow.nic_gbit_per_s, slow.network) == (2, 100.0, "ethernet")
    # 2 NICs × 100 Gbit/s ÷ 8 bits ÷ 8 GPUs = 3,125,000,000 B/s per GPU per direction
    assert slow.network_bytes_per_s_per_gpu == 3_125_000_000
    same_kind = with_network(h100, "8x400g")
    assert (same_kind.network, same_kind.network_bytes_per_s_per_gpu) == (h100.network, 50_000_000_000)


@pytest.mark.parametrize("text", ["8xfoo", "0x400g", "400g", "8x400g-token-ring"])
def test_bad_network_is_refused(catalog: Catalog, text: str) -> None:
    """Refused at the network field, in the library's words; the command line names it by its flag."""
    with pytest.raises(FieldInvalid, match=f"^network {text!r}: ") as caught:
        with_network(catalog.systems.get("hgx-h100"), text)
    assert caught.value.field == "network" and caught.value.worded(flag_of).startswith(f"--network {text!r}: ")


def test_training_dp_traffic_follows_the_network(cli: Callable[..., CliResult]) -> None:
    base = ("estimate", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--nodes", "2", "--mode", "train",
            "--dp", "16", "--precision", "bf16", "--format", "json")
    fast = json.loads(cli(*base).stdout)["time"]["dp_communication_s"]
    slow = json.loads(cli(*base, "--network", "2x100g-ib").stdout)["time"]["dp_communication_s"]
    # only the hop across nodes changes: NCCL's ring over rails sends 2 x 15/16 of each GPU's 1/8 of the
    # 8,030,261,248 bf16 gradients over its share of the network, 8 x 400 / 8 = 400 Gb/s (50 GB/s) against
    # 2 x 100 / 8 = 25 Gb/s (3.125 GB/s), at the profile's interconnect efficiency 0.8; both slower than the
    # NVSwitch share beside it (2 x 15/16 x 7/8 of the bytes at 450 GB/s x 0.8), so the NIC sets the time in both
    shard = 8_030_261_248 * 2 / 8
    assert slow - fast == pytest.approx(2 * 15 / 16 * (shard / (3.125e9 * 0.8) - shard / (50e9 * 0.8)), rel=1e-9)
    bad = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--network", "8x400g")
    assert bad.exit_code != 0 and "--network replaces a system's scale-out network; give --system" in bad.stderr
