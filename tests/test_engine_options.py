"""``--engine vllm`` through the one request layer: the acceptance commands of the estimate script, the JSON
``engine`` section, and the one-line refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from estimator.inference.report import Report
from estimator.request.errors import FieldInvalid
from estimator.request.estimate import estimate_for

MIB = 2**20


def _engine(**values: Any) -> Any:
    report = estimate_for(model="llama-3.1-8b", gpu="rtx-4090", **values)
    assert isinstance(report, Report)
    return report.engine


def test_without_an_engine_the_section_is_null() -> None:
    report = estimate_for(model="llama-3.1-8b", gpu="rtx-4090")
    assert json.loads(report.model_dump_json())["engine"] is None


def test_vllm_at_32k_on_a_4090_prints_tokens_concurrency_and_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    from estimator.cli.estimate import _main

    _main(["--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--engine", "vllm", "--max-model-len", "32k"])
    out = capsys.readouterr().out
    assert "KV tokens              47,760" in out  # 2,985 blocks of 2 MiB x 16 tokens
    assert "max concurrency        1.49x at 32,000 tokens per request" in out  # 2,985 / ⌈32,000 / 16⌉
    assert "starts                 yes" in out
    assert "vllm serve meta-llama/Llama-3.1-8B --max-model-len 32000 --gpu-memory-utilization 0.9" in out


def test_vllm_at_128k_on_a_4090_will_not_start_and_says_what_fixes_it(capsys: pytest.CaptureFixture[str]) -> None:
    from estimator.cli.estimate import _main

    _main(["--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--engine", "vllm", "--max-model-len", "128k"])
    out = " ".join(capsys.readouterr().out.split())
    assert "starts no: To serve at least one request with the models's max seq len (128000)" in out
    assert "(15.62 GiB KV cache is needed" in out  # 8,000 blocks of 2 MiB
    assert "the estimated maximum model length is 47760" in out
    assert "fix --max-model-len 47760" in out


def test_the_json_engine_section_holds_exact_blocks() -> None:
    engine = _engine(engine="vllm", max_model_len="32k")
    data = json.loads(engine.model_dump_json())
    assert data["kv_blocks"] == data["kv_cache_bytes"] // (2 * MIB) == 2985
    assert data["kv_tokens"] == 47760 and data["needed_kv_bytes"] == 2000 * 2 * MIB


def test_fp8_kv_cache_halves_the_block() -> None:
    engine = _engine(engine="vllm", max_model_len="32k", kv_cache_dtype="fp8")
    assert engine.kv_bytes_per_block == MIB


@pytest.mark.parametrize(("values", "field"), [
    ({"max_model_len": "32k"}, "max_model_len"),
    ({"enforce_eager": True}, "enforce_eager"),
    ({"engine": "vllm", "mode": "train"}, "engine"),
    ({"engine": "vllm", "gpu_memory_utilization": "1.2"}, "gpu_memory_utilization"),
    ({"engine": "vllm", "kv_cache_dtype": "int3"}, "kv_cache_dtype"),
    ({"engine": "vllm", "kv_cache_dtype": "fp8", "kv_dtype": "fp8"}, "kv_cache_dtype"),
])
def test_knobs_that_cannot_apply_are_refused_at_their_field(values: dict[str, Any], field: str) -> None:
    with pytest.raises(FieldInvalid) as caught:
        estimate_for(model="llama-3.1-8b", gpu="rtx-4090", **values)
    assert caught.value.field == field


def test_an_engine_with_expert_parallel_or_another_profile_is_refused() -> None:
    cases: tuple[tuple[dict[str, Any], str], ...] = (({"ep": "2", "gpus": "1"}, "ep"), ({"profile": "hf"}, "profile"))
    for values, field in cases:
        with pytest.raises(FieldInvalid) as caught:
            estimate_for(model="llama-3.1-8b", gpu="rtx-4090", engine="vllm", **values)
        assert caught.value.field == field


def test_a_start_that_needs_the_whole_card_offers_utilization_then_more_gpus() -> None:
    """Llama-3.1-8B on a 4090 at utilization 0.65: nothing is left after the weights (vLLM's "No available
    memory"), so no length fits; one 128Ki request's 16 GiB beside 15 GiB of weights exceeds the 23.6 GiB card,
    so no utilization does either: the fix left is more GPUs."""
    engine = _engine(engine="vllm", max_model_len="128Ki", gpu_memory_utilization="0.65")
    assert not engine.starts and engine.largest_max_model_len == 0
    assert engine.reason.startswith("No available memory for the cache blocks")
    assert engine.fix == "more GPUs: --tensor-parallel-size 2 splits the weights and the KV heads further"
