"""Expert-parallel layouts in the planner: attention groups beside EP, their memory and their all-to-all."""

from __future__ import annotations

from collections.abc import Callable

from estimator.catalog.registry import Catalog
from estimator.inference.workload import InferenceWorkload
from estimator.model.collectives import group_link
from estimator.model.experts import moe_all_to_all_s
from estimator.model.footprint import memory_per_gpu
from estimator.planning.layouts import Layout, experts_per_gpu, layouts, stage_memory
from estimator.planning.search import Search, Settings


def test_moe_layouts_add_attention_groups_and_dense_ones_do_not(catalog: Catalog) -> None:
    h100 = catalog.systems.get("hgx-h100")
    found = layouts(catalog.model("deepseek-v3"), h100, max_nodes=2, allow_tp_across=False)
    assert Layout(1, 1, 8) in found and Layout(8, 1, 16) in found and Layout(8, 2, 8) in found
    assert Layout(1, 1, 8).gpus == 8 and Layout(4, 1, 16).groups == 4 and Layout(4, 1, 16).gpus == 16
    assert all(lay.pp == 1 for lay in found if lay.groups > 1)  # EP layouts take no pipeline
    dense = layouts(catalog.model("llama-3.1-70b"), h100, max_nodes=2, allow_tp_across=False)
    assert all(lay.ep == 1 for lay in dense)


def test_stage_memory_holds_whole_experts_and_one_group_of_sequences(
        catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    model, gpu = catalog.model("deepseek-v3"), catalog.gpus.get("h200")
    w = make_workload(dtype="fp8", prompt_tokens=4096, output_tokens=1024)
    mem = stage_memory(model, gpu, w, Layout(1, 1, 8), 64, 4096, 1024)
    # everything but the routed experts whole (19,078,428,672 B) + 32 of 256 experts (653,908,770,816 ÷ 8)
    assert mem.weights == 19_078_428_672 + 81_738_596_352 == 100_817_025_024
    alone = memory_per_gpu(model, gpu, w, 1, 8, 4096, 1024)  # one attention group: ⌈64 ÷ 8⌉ sequences
    assert (mem.kv, mem.activation, mem.overhead) == (alone.kv, alone.activation, alone.overhead)
    assert experts_per_gpu(model, Layout(1, 1, 8)) == 32 and experts_per_gpu(model, Layout(8, 2, 8)) == 32


def test_an_expert_parallel_step_pays_dispatch_and_combine(
        catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    model, system = catalog.model("deepseek-v3"), catalog.systems.get("hgx-h100")
    gpu = catalog.system_gpu(system)
    w = make_workload(dtype="fp8", prompt_tokens=1024, output_tokens=256)
    search = Search(model, system, gpu, w, Settings(), 16, None, None, None)
    layout = Layout(1, 1, 16)  # 16 attention groups of one GPU over two nodes: the all-to-all crosses the network
    point = search.evaluate(layout, 64, 64)
    decode = search._estimate(1, 4, 1024, 256, 16)  # each group decodes ⌈64 ÷ 16⌉ = 4 sequences
    assert decode.time.tokens_per_s is not None
    link = group_link(system, 16)
    assert link.tier == "network"
    arch = model.arch
    assert arch is not None
    a2a = moe_all_to_all_s(arch, 4, w.activation_bytes_per_element, 16, link)
    assert a2a > 0
    chunk = search._estimate(1, 1, point.serving.chunk_tokens, 0, 16)
    chunk_a2a = moe_all_to_all_s(arch, point.serving.chunk_tokens, w.activation_bytes_per_element, 16, link)
    step = 4 / decode.time.tokens_per_s + a2a
    per_token = (chunk.time.prefill_s + chunk_a2a) / point.serving.chunk_tokens
    tpot = step + 4 * 1024 / 256 * per_token  # the serving model at one group's 4 sequences
    assert point.serving.time_per_output_token_s is not None
    assert abs(point.serving.time_per_output_token_s - tpot) <= 1e-12 * tpot
    assert point.serving.batch == 64 and point.serving.tokens_per_s is not None
    assert abs(point.serving.tokens_per_s - 64 / tpot) <= 1e-9 * point.serving.tokens_per_s  # 16 groups × 4 / TPOT
    few = search.evaluate(layout, 8, 64)  # 8 sequences leave 8 of the 16 groups idle: tokens/s counts those 8
    assert few.serving.time_per_output_token_s is not None and few.serving.tokens_per_s is not None
    assert abs(few.serving.tokens_per_s - 8 / few.serving.time_per_output_token_s) <= 1e-9 * few.serving.tokens_per_s
