"""vLLM's start-up as `estimator.inference.engine_vllm` computes it: exact block arithmetic, and the public
start-up logs of tests/data/engines/vllm_logs.yaml reproduced within per-case tolerances, each with its reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from estimator.catalog.registry import default_catalog
from estimator.inference.engine_vllm import VllmSettings, VllmStartup, kv_capacity, vllm_startup
from estimator.inference.workload import InferenceWorkload
from estimator.request.formats import kv_format, weights_format, workload_of

GIB = 2**30
MIB = 2**20
LOGS = yaml.safe_load((Path(__file__).parent / "data" / "engines" / "vllm_logs.yaml").read_text())["cases"]
BY_NAME = {case["name"]: case for case in LOGS}


def _workload(model: str, tp: int = 1, dtype: str | None = None) -> tuple[Any, InferenceWorkload]:
    catalog = default_catalog()
    spec = catalog.model(model)
    weights = weights_format(catalog, spec, dtype, None)
    return spec, workload_of(batch=1, prompt_tokens=2048, output_tokens=0, weight_format=weights,
                             kv_format=kv_format(catalog, weights, None), tensor_parallel=tp, logits="last",
                             mla_cache=None, profile=catalog.profiles.get("optimized"))


def _startup(case: dict[str, Any]) -> VllmStartup:
    spec, w = _workload(case["model"], case["tp"], case.get("dtype"))
    settings = VllmSettings(gpu_memory_utilization=case.get("gpu_memory_utilization"),
                            max_model_len=case["max_model_len"], max_num_seqs=case.get("max_num_seqs"),
                            max_num_batched_tokens=case.get("max_num_batched_tokens"))
    return vllm_startup(spec.arch, default_catalog().gpus.get(case["gpu"]), w, settings, model_id=case["model"],
                        max_position=spec.arch.max_position_embeddings)


def test_llama_8b_on_a_4090_at_32k_starts_with_whole_blocks() -> None:
    """Llama-3.1-8B: 32 layers x 8 KV heads x 128 x (K, V) x 2 bytes x 16 tokens = 2 MiB a block; every figure
    the KV side prints follows from the available bytes exactly."""
    spec, w = _workload("llama-3.1-8b")
    s = vllm_startup(spec.arch, default_catalog().gpus.get("rtx-4090"), w, VllmSettings(max_model_len=32768),
                     model_id="meta-llama/Llama-3.1-8B-Instruct", max_position=131072)
    assert s.kv_bytes_per_block == 2 * MIB
    assert s.kv_blocks == s.kv_cache_bytes // (2 * MIB) == 2985
    assert s.kv_tokens == 2985 * 16 == 47760
    assert s.needed_kv_bytes == 32768 // 16 * 2 * MIB
    assert s.max_concurrency == round(2985 / (32768 // 16), 2)
    assert s.starts and s.reason is None and s.fix is None
    assert s.command == "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768 --gpu-memory-utilization 0.9"


def test_llama_8b_on_a_4090_at_128k_is_refused_with_the_length_that_fits() -> None:
    spec, w = _workload("llama-3.1-8b")
    s = vllm_startup(spec.arch, default_catalog().gpus.get("rtx-4090"), w, VllmSettings(max_model_len=131072),
                     model_id="meta-llama/Llama-3.1-8B-Instruct", max_position=131072)
    assert not s.starts
    assert s.needed_kv_bytes == 16 * GIB  # 8,192 blocks of 2 MiB
    assert s.largest_max_model_len == s.kv_tokens == 47760  # full attention: every whole block of the pool
    assert s.reason is not None and s.reason.startswith(
        "To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed")
    assert "the estimated maximum model length is 47760" in s.reason
    assert s.fix == "--max-model-len 47760 (the longest that fits at these settings)"


def test_sliding_window_layers_are_charged_window_plus_step() -> None:
    """gpt-oss-120b: 18 full layers and 18 of window 128; a 32 KiB page (8 KV heads x 64 x 2 x 2 bytes x 16). A
    sliding layer holds min(128 - 1 + 1024, 131072) tokens = 72 blocks, plus one (SlidingWindowSpec)."""
    spec, w = _workload("gpt-oss-120b")
    cap = kv_capacity(spec.arch, w, 10 * GIB, max_model_len=131072, max_num_batched_tokens=1024)
    assert cap.needed_bytes == 18 * 8192 * 32768 + 18 * 73 * 32768


@pytest.mark.parametrize("name", [c["name"] for c in LOGS])
def test_the_block_arithmetic_reproduces_each_log_from_its_own_available_memory(name: str) -> None:
    """From the KV memory the log printed (rounded to 0.01 GiB, so up to 0.5 % on a 1 GiB pool), the tokens,
    the KV one max_model_len request needs and the longest that fits. Qwen3-235B's pool reads 1.1 % above its
    token count (8.11 GiB against 178,880 tokens x 48,128 bytes = 8.02 GiB): 1.5 % allows that one log."""
    case = BY_NAME[name]
    spec, w = _workload(case["model"], case["tp"], case.get("dtype"))
    cap = kv_capacity(spec.arch, w, round(case["kv_gib"] * GIB), max_model_len=case["max_model_len"],
                      max_num_batched_tokens=case.get("max_num_batched_tokens", 2048))
    if case.get("kv_tokens"):
        assert cap.tokens == pytest.approx(case["kv_tokens"], rel=0.015)
    if case.get("needed_gib") is not None:
        assert round(cap.needed_bytes / GIB, 2) == case["needed_gib"]
    if case.get("estimated_max_len") is not None:
        assert cap.largest_max_model_len == pytest.approx(case["estimated_max_len"], rel=0.005)
    fits = cap.needed_bytes <= round(case["kv_gib"] * GIB)
    assert fits == case["starts"]


# From the estimate's own terms to the log's KV tokens. Each bound is what the model reaches, with why it misses.
END_TO_END = {
    "llama-3.1-8b-rtx-3090-20k": (0.03, "weights, activation and non-torch all within 0.1 GiB of the log"),
    "llama-3.1-8b-rtx-3090-29k": (0.03, "as above; the refusal is exact"),
    "qwen3-4b-12gb-10k": (0.20, "this card's CUDA total is the full 12.00 GiB, 430 MiB above the policy's median "
                          "gap: 0.4 GiB of a 3 GiB pool"),
    "qwen3-235b-a22b-fp8-h100-tp4": (0.50, "vLLM 0.9.2 held 3.7 GiB more than weights + activation + non-torch "
                                     "(not modelled: a 1,024-row sampler's sort buffers, FP8 MoE workspaces)"),
}


@pytest.mark.parametrize("name", sorted(END_TO_END))
def test_kv_tokens_from_the_estimates_terms_against_each_log(name: str) -> None:
    bound, _why = END_TO_END[name]
    case = BY_NAME[name]
    assert abs(_startup(case).kv_tokens / case["kv_tokens"] - 1) <= bound


_MISSED = pytest.mark.xfail(strict=True, reason=(
    "vLLM 0.11 left 1.71 GiB for KV where the estimate's terms leave 13 GiB: the MXFP4 MoE kernels' and the "
    "sampler's profile-run memory are not modelled"))


@pytest.mark.parametrize("name", [pytest.param(c["name"], marks=_MISSED) if c["name"] == "gpt-oss-120b-h100-refused"
                                  else c["name"] for c in LOGS if c.get("gpu")])
def test_starts_or_not_as_each_log(name: str) -> None:
    case = BY_NAME[name]
    assert _startup(case).starts == case["starts"]
