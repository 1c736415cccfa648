"""Catalog entries of fine-tunes and their families (Llama 3, the DeepSeek-R1 distills, QwQ, Qwen2.5-Coder, Yi,
ChatGLM3): the names people type resolve to them, a fine-tune has its base model's architecture, and the KV cache
per token is the count by hand."""

from __future__ import annotations

import pytest

from estimator.catalog.registry import Catalog
from estimator.model.inventory import param_count
from estimator.model.memory import kv_elements_per_token


@pytest.mark.parametrize(("typed", "name"), [
    ("meta-llama/Meta-Llama-3-8B-Instruct", "llama-3-8b"),
    ("llama3:8b", "llama-3-8b"),
    ("llama3-70b", "llama-3-70b"),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "deepseek-r1-distill-qwen-32b"),
    ("DeepSeek-R1-Distill-Qwen-1.5B", "deepseek-r1-distill-qwen-1.5b"),
    ("r1-distill-llama-70b", "deepseek-r1-distill-llama-70b"),
    ("deepseek-r1:14b", "deepseek-r1-distill-qwen-14b"),  # Ollama's tag for the distill
    ("Qwen/QwQ-32B", "qwq-32b"),
    ("qwq", "qwq-32b"),
    ("Qwen/Qwen2.5-Coder-32B-Instruct", "qwen2.5-coder-32b"),
    ("qwen2.5-coder:1.5b", "qwen2.5-coder-1.5b"),
    ("THUDM/chatglm3-6b", "chatglm3-6b"),
    ("01-ai/Yi-1.5-9B-Chat", "yi-1.5-9b"),
    ("01-ai/Yi-34B", "yi-34b"),
])
def test_the_names_people_type_resolve(shipped_catalog: Catalog, typed: str, name: str) -> None:
    assert shipped_catalog.models.get(typed).name == name


@pytest.mark.parametrize(("fine_tune", "base"), [
    ("deepseek-r1-distill-qwen-32b", "qwen2.5-32b"),  # R1 distilled into Qwen2.5-32B
    ("deepseek-r1-distill-qwen-14b", "qwen2.5-14b"),
    ("deepseek-r1-distill-qwen-7b", "qwen2.5-7b"),  # Qwen2.5-Math-7B: Qwen2.5-7B's widths
    ("deepseek-r1-distill-llama-8b", "llama-3.1-8b"),
    ("deepseek-r1-distill-llama-70b", "llama-3.3-70b"),
    ("qwq-32b", "qwen2.5-32b"),
    ("qwen2.5-coder-7b", "qwen2.5-7b"),
    ("qwen2.5-coder-14b", "qwen2.5-14b"),
    ("qwen2.5-coder-32b", "qwen2.5-32b"),
    ("llama-3-8b", "llama-3.1-8b"),  # Llama 3.1 changed the RoPE scaling and context, not the widths
    ("llama-3-70b", "llama-3.1-70b"),
    ("yi-1.5-34b", "yi-34b"),  # Yi-1.5 is Yi continued in pre-training
])
def test_a_fine_tune_has_its_base_models_parameters(shipped_catalog: Catalog, fine_tune: str, base: str) -> None:
    tuned, original = shipped_catalog.models.get(fine_tune), shipped_catalog.models.get(base)
    assert tuned.arch is not None and original.arch is not None
    assert param_count(tuned.arch) == param_count(original.arch) == tuned.hf_params == original.hf_params


@pytest.mark.parametrize(("name", "per_token"), [
    ("llama-3-8b", 32 * 8 * (128 + 128)),  # 32 layers × 8 KV heads × (K + V) of head_dim 128
    ("llama-3-70b", 80 * 8 * 256),
    ("deepseek-r1-distill-qwen-1.5b", 28 * 2 * 256),  # 1,536 / 12 heads = 128 a head, 2 KV heads
    ("deepseek-r1-distill-qwen-32b", 64 * 8 * 256),
    ("qwq-32b", 64 * 8 * 256),
    ("qwen2.5-coder-7b", 28 * 4 * 256),
    ("yi-1.5-6b", 32 * 4 * 256),  # 4,096 / 32 heads = 128, 4 KV heads
    ("yi-1.5-9b", 48 * 4 * 256),
    ("yi-34b", 60 * 8 * 256),  # 7,168 / 56 heads = 128
    ("chatglm3-6b", 28 * 2 * 256),  # multi_query_group_num 2, kv_channels 128
])
def test_kv_cache_elements_per_token_by_hand(shipped_catalog: Catalog, name: str, per_token: int) -> None:
    arch = shipped_catalog.models.get(name).arch
    assert arch is not None
    assert sum(kv_elements_per_token(arch, layer, decompressed_mla=False) for layer in range(arch.num_layers)) \
        == per_token
