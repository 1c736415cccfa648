"""The Report fields a point sets (`inference.point_fields`): named as the Report's own fields, and what estimate
reports; a sweep's columns come from the same functions (tests/planning/test_sweep.py checks the rows)."""

from __future__ import annotations

from collections.abc import Callable

from estimator import InferenceWorkload, estimate
from estimator.catalog.registry import Catalog
from estimator.inference.point_fields import memory_point_fields, time_point_fields
from estimator.inference.report import MemoryReport, TimeReport
from estimator.model.footprint import GpuMemory, memory_per_gpu
from estimator.model.timing import PhaseCost, PhaseTime

COST = PhaseCost(matmul_flops=4e12, attention_flops=0.0, weight_bytes=2e9, kv_bytes=1e9, elementwise_bytes=1e9,
                 layers=32)
TIME = PhaseTime(bound_s=1e-3, bound="compute", expected_s=2e-3, compute_s=2e-3, memory_s=1e-3, communication_s=0.0)


def test_the_fields_are_the_reports_own() -> None:
    memory = memory_point_fields(GpuMemory(10, 20, 30, 40, 100, 5), 2, 150)
    assert set(memory) <= set(MemoryReport.model_fields)
    assert memory["total_bytes"] == 200 and memory["kv_cache_bytes"] == 40 and memory["state_bytes"] == 10
    assert memory["fits"] and memory["headroom_bytes"] == 50
    time = time_point_fields(COST, COST, TIME, TIME, TIME, 8, 2)
    assert set(time) <= set(TimeReport.model_fields)
    assert time["tokens_per_s"] == 8 / 2e-3 and time["prefill_flops"] == 8e12
    encoder = time_point_fields(COST, COST, TIME, None, None, 8, 2)
    assert {k for k, v in encoder.items() if v is None} == {
        "decode_step_s", "decode_step_bound_s", "bound", "tokens_per_s", "tokens_per_s_bound",
        "tokens_per_s_per_sequence", "decode_bytes", "decode_flops", "decode_flop_per_byte",
        "decode_flop_per_s_per_gpu"}


def test_estimate_reports_them(catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    w = make_workload(batch=4, prompt_tokens=1024, output_tokens=128, tensor_parallel=2)
    report = estimate(catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h100"), w)
    dumped = report.model_dump()
    mem = memory_per_gpu(catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h100"), w, 2, 4, 1024, 128)
    for name, value in memory_point_fields(mem, 2, report.memory.capacity_bytes).items():
        assert dumped["memory"][name] == value, name

