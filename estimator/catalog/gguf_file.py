"""A ``.gguf`` file (llama.cpp, Ollama) read from its header: architecture, context and every tensor's quant type.

The header's key-value metadata (``general.architecture`` and ``<arch>.block_count``, ``embedding_length``,
``attention.head_count``...: the GGUF specification, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md)
becomes the Hugging Face config.json the same model would carry, so the family readers build its architecture;
the tensor infos give each tensor's stored bytes under its own quant type (Q4_K, Q6_K, F16...). The reader is the
maintained ``gguf`` package (llama.cpp's gguf-py, the optional extra ``checkpoints``), which maps the file
without reading tensor data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from estimator.catalog.checkpoint_files import StoredTensor, StoredWeights, summarize
from estimator.errors import SpecInvalid, echoed

INSTALL_HINT = "reading a .gguf file needs the gguf package: pip install 'llm-estimator[checkpoints]'"
# GGUF general.architecture → the Hugging Face model_type of the same layout (dense, and with experts);
# llama.cpp's convert_hf_to_gguf.py writes Llama, Mistral and Mixtral as "llama".
MODEL_TYPES: dict[str, tuple[str, str]] = {
    "llama": ("llama", "mixtral"),
    "qwen2": ("qwen2", "qwen2"),
    "qwen3": ("qwen3", "qwen3_moe"),
    "qwen3moe": ("qwen3_moe", "qwen3_moe"),
}
# config.json field ← GGUF key under the architecture's prefix (gguf-py constants.py Keys.LLM / Keys.Attention)
FIELDS: dict[str, str] = {
    "hidden_size": "embedding_length",
    "num_hidden_layers": "block_count",
    "intermediate_size": "feed_forward_length",
    "num_attention_heads": "attention.head_count",
    "num_key_value_heads": "attention.head_count_kv",
    "head_dim": "attention.key_length",
    "max_position_embeddings": "context_length",
    "rms_norm_eps": "attention.layer_norm_rms_epsilon",
    "rope_theta": "rope.freq_base",
    "num_experts": "expert_count",
    "num_local_experts": "expert_count",
    "num_experts_per_tok": "expert_used_count",
    "moe_intermediate_size": "expert_feed_forward_length",
}
# what each GGML type computes in once dequantized (llama.cpp's CUDA kernels dequantize to fp16)
COMPUTE_DTYPE = {"F32": "fp32", "BF16": "bf16"}


def _value(field: Any) -> Any:
    """A metadata field's value: a scalar, a string, or a list."""
    value = field.contents()
    return value.item() if hasattr(value, "item") else value


def _reader(path: Path) -> Any:
    try:
        from gguf import GGUFReader
    except ImportError:
        raise SpecInvalid(INSTALL_HINT) from None
    try:
        return GGUFReader(path)
    except (ValueError, OSError, IndexError, KeyError, TypeError) as error:  # bad magic, truncated, malformed
        raise SpecInvalid(f"{path}: not a readable GGUF file: {error}") from None


def _metadata(reader: Any) -> dict[str, Any]:
    skip = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.merges")
    return {name: _value(field) for name, field in reader.fields.items()
            if not name.startswith("GGUF.") and name not in skip}


def gguf_config(metadata: dict[str, Any], tensors: list[StoredTensor], path: Path) -> dict[str, Any]:
    """The config.json a GGUF header describes (the fields `FIELDS` maps, vocabulary from the embedding)."""
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str) or arch not in MODEL_TYPES:
        raise SpecInvalid(f"{path}: GGUF architecture {echoed(str(arch))!r} is not modelled; supported: "
                          f"{', '.join(MODEL_TYPES)}")
    config: dict[str, Any] = {}
    for name, key in FIELDS.items():
        value = metadata.get(f"{arch}.{key}")
        if value is not None:
            if not isinstance(value, int | float):
                raise SpecInvalid(f"{path}: GGUF {arch}.{key} is {value!r}, not one number")
            config[name] = value
    embed = next((t for t in tensors if t.name == "token_embd.weight"), None)
    hidden = config.get("hidden_size")
    if embed is None or not isinstance(hidden, int) or hidden <= 0:
        raise SpecInvalid(f"{path}: GGUF file lacks {arch}.embedding_length or token_embd.weight")
    dense, moe = MODEL_TYPES[str(arch)]
    config["model_type"] = moe if config.get("num_experts") else dense
    config["vocab_size"] = embed.elements // hidden
    config["tie_word_embeddings"] = not any(t.name == "output.weight" for t in tensors)
    if config.get("num_experts") and "moe_intermediate_size" not in config:
        config["moe_intermediate_size"] = config.get("intermediate_size")
    if metadata.get("general.name"):
        config["_name_or_path"] = str(metadata["general.name"])
    return config


def read_gguf(path: Path) -> tuple[dict[str, Any], StoredWeights]:
    """The config and stored weights of one ``.gguf`` file."""
    reader = _reader(path)
    tensors = [StoredTensor(t.name, t.tensor_type.name, int(t.n_elements), int(t.n_bytes)) for t in reader.tensors]
    config = gguf_config(_metadata(reader), tensors, path)
    return config, summarize("gguf", 1, tensors, COMPUTE_DTYPE, "fp16")
