"""`estimate --mode train --ep`: experts sharded over an EP group inside data parallel (Megatron-LM's
expert-model-parallel), their states, all-to-all and gradient reduction, by hand."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from estimator.catalog.registry import Catalog
from estimator.errors import WorkloadInvalid
from estimator.model.inventory import param_count
from estimator.notes import NoteCode
from estimator.training.estimate import estimate_training
from estimator.training.workload import TrainingWorkload
from tests.conftest import CliResult

EXPERTS = 58 * 256 * 3 * 7168 * 2048  # deepseek-v3's routed experts: 653,908,770,816 parameters


def _workload(catalog: Catalog, **fields: object) -> TrainingWorkload:
    base: dict[str, object] = {"batch": 1, "seq_len": 4096, "precision": "bf16", "zero": 1, "dp": 64, "ep": 8,
                               "profile": catalog.profiles.get("optimized")}
    return TrainingWorkload(**{**base, **fields})


def test_expert_states_live_on_one_eighth_of_the_gpus(catalog: Catalog) -> None:
    model = catalog.model("deepseek-v3")
    assert model.arch is not None
    params = param_count(model.arch)
    dense = params - EXPERTS
    report = estimate_training(model, catalog.gpus.get("h100"), _workload(catalog),
                               system=catalog.systems.get("hgx-h100"), nodes=8)
    mem = report.memory
    # bf16: 2 B weights and 2 B gradients per parameter, unsharded at ZeRO-1; the experts' on 1/8 of the GPUs
    assert mem.weights_bytes == 2 * dense + 2 * EXPERTS // 8
    assert mem.gradient_bytes == 2 * dense + 2 * EXPERTS // 8
    # AdamW's two bf16 states, ZeRO-1 sharded: the dense part over all 64 ranks, the experts' over the 64 / 8 = 8
    # ranks holding the same experts; 4 × EXPERTS / 8 / 8 = 4 × EXPERTS / 64 either way, rounded up apart
    assert mem.optimizer_bytes == math.ceil(4 * dense / 64) + math.ceil(4 * EXPERTS / 8 / 8)
    assert (report.workload.ep, report.workload.dp) == (8, 64)


def test_all_to_all_and_expert_gradients_by_hand(catalog: Catalog) -> None:
    model = catalog.model("deepseek-v3")
    assert model.arch is not None
    dense = param_count(model.arch) - EXPERTS
    report = estimate_training(model, catalog.gpus.get("h100"), _workload(catalog),
                               system=catalog.systems.get("hgx-h100"), nodes=8)
    t = report.time
    # each GPU dispatches its 4,096 tokens × top-8 × 7168 × 2 B = 469,762,048 B to the 8 GPUs of its node (EP 8
    # over consecutive DP ranks: NVSwitch, 450 GB/s × the profile's 0.8, 1.9 µs), dispatch and combine in the
    # forward and in the backward: 58 MoE layers × 4 all-to-alls
    payload = 4096 * 8 * 7168 * 2
    assert payload == 469_762_048
    one = 7 * 1.9e-6 + 7 / 8 * payload / (450e9 * 0.8)
    assert t.ep_communication_s == pytest.approx(58 * 4 * one, rel=1e-12)
    # gradients (bf16 on the wire): the dense part all-reduced over all 64 ranks, NCCL's ring over 8 rails of 8
    # nodes (the NIC's 1/8 at 50 GB/s × 0.8 slower than NVSwitch's 7/8); the experts' over the 8 ranks holding the
    # same experts, one per node, a ring over the network
    n, nic, nvlink = 64, 50e9 * 0.8, 450e9 * 0.8
    wire = (n - 1) / n * dense * 2
    rail = 2 * ((n - 8) * 1.9e-6 + 7 * 4e-6 + max(wire * 7 / 8 / nvlink, wire / 8 / nic))
    experts = 2 * 7 * 4e-6 + 2 * 7 / 8 * EXPERTS / 8 * 2 / nic
    assert t.dp_communication_s == pytest.approx(rail + experts, rel=1e-9)
    assert NoteCode.EXPERT_PARALLEL in [n.code for n in report.assumptions]
    assert NoteCode.EXPERT_ALL_TO_ALL in [n.code for n in report.explain]


def test_full_recompute_repeats_the_forward_all_to_all(catalog: Catalog) -> None:
    model, gpu, hgx = catalog.model("deepseek-v3"), catalog.gpus.get("h100"), catalog.systems.get("hgx-h100")
    plain = estimate_training(model, gpu, _workload(catalog, grad_accum=2), system=hgx, nodes=8)
    full = estimate_training(model, gpu, _workload(catalog, grad_accum=2, recompute="full"), system=hgx, nodes=8)
    assert full.time.ep_communication_s == pytest.approx(6 / 4 * plain.time.ep_communication_s, rel=1e-12)


@pytest.mark.parametrize(("model", "fields", "message"), [
    ("llama-3.1-8b", {}, "no mixture-of-experts layers"),
    ("deepseek-v3", {"ep": 3, "dp": 63}, "does not divide the 256 routed experts"),
    ("deepseek-v3", {"ep": 8, "dp": 12}, "ep 8 must divide dp 12"),  # the library names fields; the CLI, flags
])
def test_layouts_not_modelled_are_refused(catalog: Catalog, model: str, fields: dict[str, object],
                                          message: str) -> None:
    with pytest.raises((WorkloadInvalid, ValueError), match=message):
        estimate_training(catalog.model(model), catalog.gpus.get("h100"), _workload(catalog, **fields))


def test_cli_ep_in_train_mode(cli: Callable[..., CliResult]) -> None:
    args = ("estimate", "--model", "mixtral-8x7b", "--system", "hgx-h100", "--mode", "train", "--dp", "8",
            "--ep", "8", "--precision", "bf16")
    table = cli(*args, "--zero", "1", "--explain")
    assert table.exit_code == 0, table.stderr
    assert "expert parallel (all-to-all)" in table.stdout and "expert-model-parallel" in table.stdout
    for bad, message in [(("--zero", "3"), "--ep with ZeRO-3 / FSDP full shard is not modelled"),
                         (("--zero", "1", "--dp", "4"), "--ep 8 must divide --dp 4")]:
        refused = cli(*args, *bad)
        assert refused.exit_code == 2 and refused.stderr.count("\n") == 1 and message in refused.stderr
