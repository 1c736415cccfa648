"""`estimate --ep`: whole experts per GPU, each attention group's share of the batch, and the all-to-all of every
MoE layer over the link the EP group crosses, by hand."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from estimator import InferenceWorkload, estimate
from estimator.catalog.registry import Catalog
from estimator.errors import WorkloadInvalid
from estimator.model.collectives import group_link
from estimator.model.footprint import memory_per_gpu
from estimator.notes import NoteCode
from tests.conftest import CliResult

Make = Callable[..., InferenceWorkload]
EXPERTS_FP8 = 653_908_770_816  # deepseek-v3: 58 MoE layers × 256 experts × 3 × 7168 × 2048 weights, 1 B in fp8


def test_expert_memory_per_gpu_exactly(catalog: Catalog, make_workload: Make) -> None:
    model, hgx = catalog.model("deepseek-v3"), catalog.systems.get("hgx-h100")
    gpu = catalog.gpus.get("h100")
    w = make_workload(dtype="fp8", batch=16, prompt_tokens=1024, output_tokens=128)
    report = estimate(model, gpu, w, system=hgx, ep=8)
    mem = report.memory
    assert (report.workload.gpus, report.workload.expert_parallel, report.workload.attention_groups) == (8, 8, 8)
    assert mem.experts_per_gpu == 32  # 256 experts ÷ 8 GPUs
    assert mem.expert_weights_per_gpu_bytes == EXPERTS_FP8 // 8 == 81_738_596_352
    # everything but the routed experts whole on each GPU (TP 1): 19,078,428,672 B (tests/model/test_experts.py)
    assert mem.weights_per_gpu_bytes == 19_078_428_672 + 81_738_596_352 == 100_817_025_024
    # each of the 8 attention groups holds its 16 ÷ 8 = 2 sequences' cache, activations and overhead
    group = memory_per_gpu(model, gpu, w, 1, 2, 1024, 128)
    assert mem.kv_cache_per_gpu_bytes == group.kv
    assert mem.per_gpu_bytes == group.per_gpu - group.weights + 100_817_025_024
    assert mem.total_bytes == 8 * mem.per_gpu_bytes and mem.kv_cache_bytes == 8 * group.kv  # type: ignore[operator]
    # the model's one copy + what the 8 GPUs hold again (the non-expert part 7 more times)
    assert mem.weights_bytes + mem.weights_replicated_bytes == 8 * 100_817_025_024


def test_all_to_all_volume_and_time_by_hand(catalog: Catalog, make_workload: Make) -> None:
    model, hgx = catalog.model("deepseek-v3"), catalog.systems.get("hgx-h100")
    gpu = catalog.gpus.get("h100")
    w = make_workload(dtype="fp8", batch=8, prompt_tokens=512, output_tokens=64)
    report = estimate(model, gpu, w, system=hgx, ep=8)
    # prefill: each GPU (TP 1) holds 1 sequence × 512 tokens; dispatch = 512 tokens × top-8 × 7168 × 2 B (bf16)
    prefill_bytes = 512 * 8 * 7168 * 2
    assert prefill_bytes == 58_720_256
    decode_bytes = 1 * 8 * 7168 * 2  # one token per GPU per step
    # per MoE layer, dispatch and combine: 7 steps × 1.9 µs + 7/8 of the bytes ÷ 450 GB/s (NVSwitch per direction)
    def layer(n_bytes: int) -> float:
        return 7 * 1.9e-6 + 7 / 8 * n_bytes / 450e9

    expected = 58 * 2 * (layer(prefill_bytes) + layer(decode_bytes))
    assert report.time.all_to_all_s == pytest.approx(expected, rel=1e-12)
    # the same job as the planner prices it: its phases at one group's batch, the all-to-all added to each
    planner = estimate(model, gpu, w.model_copy(update={"batch": 1}), system=hgx, expert_groups=8)
    assert report.time.prefill_s == pytest.approx(planner.time.prefill_s + 58 * 2 * layer(prefill_bytes), rel=1e-12)
    assert report.time.decode_step_s == pytest.approx(planner.time.decode_step_s  # type: ignore[operator]
                                                      + 58 * 2 * layer(decode_bytes), rel=1e-12)
    # every group steps at once: 8 sequences per mean-context step, each step with its all-to-all
    step_s = 1 / planner.time.tokens_per_s + 58 * 2 * layer(decode_bytes)  # type: ignore[operator]
    assert report.time.tokens_per_s == pytest.approx(8 / step_s, rel=1e-12)
    codes = [n.code for n in report.explain]
    assert codes.count(NoteCode.EXPERT_ALL_TO_ALL) == 2 and NoteCode.EXPERT_WEIGHTS in codes
    assert NoteCode.EXPERT_PARALLEL in [n.code for n in report.assumptions]


def test_ep_across_nodes_runs_over_the_network(catalog: Catalog, make_workload: Make) -> None:
    model, hgx = catalog.model("deepseek-v3"), catalog.systems.get("hgx-h100")
    w = make_workload(dtype="fp8", batch=16, prompt_tokens=512, output_tokens=64)
    report = estimate(model, catalog.gpus.get("h100"), w, system=hgx, nodes=2, ep=16)
    link = group_link(hgx, 16)
    assert link.tier == "network" and link.bytes_per_s == 50e9  # 8 × 400 Gb/s per node, one NIC per GPU
    one = 15 * 4.0e-6 + 15 / 16 * 512 * 8 * 7168 * 2 / 50e9
    step = 15 * 4.0e-6 + 15 / 16 * 8 * 7168 * 2 / 50e9
    assert report.time.all_to_all_s == pytest.approx(58 * 2 * (one + step), rel=1e-12)
    assert report.memory.experts_per_gpu == 16


def test_ep_equal_to_tp_needs_no_all_to_all(catalog: Catalog, make_workload: Make) -> None:
    model, hgx = catalog.model("deepseek-v3"), catalog.systems.get("hgx-h100")
    w = make_workload(dtype="fp8", batch=4, tensor_parallel=8, output_tokens=16)
    report = estimate(model, catalog.gpus.get("h100"), w, system=hgx, ep=8)
    assert report.time.all_to_all_s == 0.0 and report.workload.attention_groups == 1
    assert report.memory.experts_per_gpu == 32 and report.workload.gpus == 8


@pytest.mark.parametrize(("model", "ep", "tp", "batch", "nodes", "message"), [
    ("llama-3.1-8b", 2, 1, 2, 1, "not a mixture-of-experts model"),
    ("deepseek-v3", 3, 1, 3, 1, "does not divide deepseek-v3's 256 routed experts"),
    ("deepseek-v3", 4, 8, 4, 1, "give an ep that gpus divides"),  # the library names fields; the CLI, flags
    ("deepseek-v3", 8, 1, 4, 1, "batch 4 does not split evenly over the 8 attention groups"),
    ("deepseek-v3", 16, 1, 16, 1, "expert parallel 16 needs 16 GPUs; 1 × hgx-h100 has 8"),
])
def test_combinations_not_modelled_are_refused(catalog: Catalog, make_workload: Make, model: str, ep: int, tp: int,
                                               batch: int, nodes: int, message: str) -> None:
    w = make_workload(batch=batch, tensor_parallel=tp)
    with pytest.raises(WorkloadInvalid, match=message):
        estimate(catalog.model(model), catalog.gpus.get("h100"), w, system=catalog.systems.get("hgx-h100"),
                 nodes=nodes, ep=ep)


def test_ep_beyond_tp_needs_a_system(catalog: Catalog, make_workload: Make) -> None:
    with pytest.raises(WorkloadInvalid, match="needs the link its all-to-all crosses"):
        estimate(catalog.model("deepseek-v3"), catalog.gpus.get("h100"), make_workload(batch=8), ep=8)


def test_cli_ep_in_every_format_and_mode(cli: Callable[..., CliResult]) -> None:
    args = ("estimate", "--model", "mixtral-8x7b", "--system", "hgx-h100", "--ep", "8", "--batch", "16",
            "--output-tokens", "64")
    table = cli(*args, "--explain")
    assert table.exit_code == 0, table.stderr
    assert "expert parallel 8" in table.stdout and "all-to-all" in table.stdout
    done = cli(*args, "--format", "json")
    data = json.loads(done.stdout)
    assert (data["workload"]["expert_parallel"], data["memory"]["experts_per_gpu"]) == (8, 1)  # 8 experts ÷ 8
    assert data["time"]["all_to_all_s"] > 0
    csv_text = cli(*args, "--format", "csv").stdout
    assert "workload.expert_parallel" in csv_text.splitlines()[0]
    for bad, message in [(("--ep", "3"), "does not divide"), (("--ep", "x"), "--ep"),
                         (("--mode", "train", "--ep", "8"), "--ep 8 must divide --dp 1")]:  # train: inside DP
        refused = cli("estimate", "--model", "mixtral-8x7b", "--system", "hgx-h100", *bad)
        assert refused.exit_code == 2 and refused.stderr.count("\n") == 1 and message in refused.stderr
        assert "Traceback" not in refused.stderr
