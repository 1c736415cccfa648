"""The repositories the fake Hub serves: real published config.json files and safetensors headers of the tensors
those checkpoints store.

How the headers are built (no real header is copied; the tensor lists are):

- openai/gpt-oss-120b: the 687 tensors the published checkpoint lists (openai/gpt-oss-120b's safetensors metadata
  as the Hub shows it: embed_tokens and lm_head 201088 × 2880 BF16, the final norm, and per layer the 19 tensors
  below), names, shapes and stored dtypes as listed: the routed experts are MXFP4, stored as ``*_blocks`` U8
  [experts, rows, hidden / 32, 16] (32 four-bit values in 16 bytes) and ``*_scales`` U8 [experts, rows, hidden / 32]
  (one E8M0 scale per block), everything else BF16. The checkpoint ships 15 shards,
  model-00000-of-00014.safetensors to model-00014-of-00014.safetensors; which shard holds which tensor is ours
  (embeddings first, the layers in order, lm_head last), not the published index's: only the files' sum matters.
- Qwen/Qwen3-0.6B and meta-llama/Llama-3.2-1B: one model.safetensors (both publish a single file) holding the
  tensors transformers' Qwen3ForCausalLM / LlamaForCausalLM name for their configs, all BF16 (``torch_dtype``),
  tied embeddings (no lm_head tensor), shapes from the config's widths.

Each header is a safetensors header as the format defines it: an 8-byte little-endian length, then JSON naming each
tensor's dtype, shape and data_offsets, packed in order; the data that follows is never served past the header.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "data" / "configs"
BYTES = {"BF16": 2, "U8": 1, "F32": 4}
Tensor = tuple[str, str, tuple[int, ...]]  # name, stored dtype, shape


@dataclass(frozen=True)
class Shard:
    """A safetensors file: its header bytes, and its size as if the data followed."""

    header: bytes
    size: int
    tensor_bytes: int  # the sum of the header's data_offsets spans

    def read(self, start: int, end: int) -> bytes:
        """Bytes start..end (inclusive) of the file: the header, then zeros for the data."""
        end = min(end, self.size - 1)
        head = self.header[start:end + 1]
        return head + bytes(max(0, end + 1 - max(start, len(self.header))))


def shard(tensors: Iterable[Tensor]) -> Shard:
    """The safetensors file of ``tensors``, packed in order."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dtype, shape in tensors:
        elements = 1
        for dim in shape:
            elements *= dim
        size = elements * BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes with spaces
    prefix = len(text).to_bytes(8, "little") + text
    return Shard(prefix, len(prefix) + offset, offset)


@dataclass
class Repo:
    """A model repository: its commits (each a set of files) and the names that point at them."""

    commits: dict[str, dict[str, bytes | Shard]]
    refs: dict[str, str]
    gated: bool = False
    requests: list[str] = field(default_factory=list)


def gpt_oss_layer(i: int, hidden: int = 2880, experts: int = 128, heads: int = 64, kv_heads: int = 8,
                  head_dim: int = 64) -> list[Tensor]:
    """The 19 tensors of one gpt-oss layer, as the published checkpoint stores them."""
    p, blocks = f"model.layers.{i}.", hidden // 32
    q, kv, bf = heads * head_dim, kv_heads * head_dim, "BF16"
    return [
        (p + "input_layernorm.weight", bf, (hidden,)),
        (p + "mlp.experts.down_proj_bias", bf, (experts, hidden)),
        (p + "mlp.experts.down_proj_blocks", "U8", (experts, hidden, blocks, 16)),
        (p + "mlp.experts.down_proj_scales", "U8", (experts, hidden, blocks)),
        (p + "mlp.experts.gate_up_proj_bias", bf, (experts, 2 * hidden)),
        (p + "mlp.experts.gate_up_proj_blocks", "U8", (experts, 2 * hidden, blocks, 16)),
        (p + "mlp.experts.gate_up_proj_scales", "U8", (experts, 2 * hidden, blocks)),
        (p + "mlp.router.bias", bf, (experts,)),
        (p + "mlp.router.weight", bf, (experts, hidden)),
        (p + "post_attention_layernorm.weight", bf, (hidden,)),
        (p + "self_attn.k_proj.bias", bf, (kv,)),
        (p + "self_attn.k_proj.weight", bf, (kv, hidden)),
        (p + "self_attn.o_proj.bias", bf, (hidden,)),
        (p + "self_attn.o_proj.weight", bf, (hidden, q)),
        (p + "self_attn.q_proj.bias", bf, (q,)),
        (p + "self_attn.q_proj.weight", bf, (q, hidden)),
        (p + "self_attn.sinks", bf, (heads,)),
        (p + "self_attn.v_proj.bias", bf, (kv,)),
        (p + "self_attn.v_proj.weight", bf, (kv, hidden)),
    ]


GPT_OSS_COMMIT = "b5c939de8f754692c1647ca79fbf85e8c1e70f8a"  # the commit the published file listing links to
GPT_OSS_SHARDS = 15


def gpt_oss_120b() -> Repo:
    """openai/gpt-oss-120b: its config.json (with quantization_config mxfp4), index and 15 shard headers."""
    layers, vocab, hidden = 36, 201088, 2880
    groups: list[list[Tensor]] = [[] for _ in range(GPT_OSS_SHARDS)]
    groups[0] += [("model.embed_tokens.weight", "BF16", (vocab, hidden))]
    for i in range(layers):
        groups[1 + i * (GPT_OSS_SHARDS - 2) // layers] += gpt_oss_layer(i)
    groups[-1] += [("model.norm.weight", "BF16", (hidden,)), ("lm_head.weight", "BF16", (vocab, hidden))]
    names = [f"model-{k:05d}-of-{GPT_OSS_SHARDS - 1:05d}.safetensors" for k in range(GPT_OSS_SHARDS)]
    shards = {name: shard(group) for name, group in zip(names, groups, strict=True)}
    weight_map = {t[0]: name for name, group in zip(names, groups, strict=True) for t in group}
    index = {"metadata": {"total_size": sum(s.tensor_bytes for s in shards.values())}, "weight_map": weight_map}
    files: dict[str, bytes | Shard] = {"config.json": (CONFIGS / "openai--gpt-oss-120b.json").read_bytes(),
                                       "model.safetensors.index.json": json.dumps(index).encode(), **shards}
    return Repo({GPT_OSS_COMMIT: files}, {"main": GPT_OSS_COMMIT})


def dense_tensors(config: dict[str, Any], qk_norm: bool) -> list[Tensor]:
    """A Llama-style decoder's tensors (transformers' names), BF16, tied embeddings."""
    hidden, ffn, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    head_dim = config.get("head_dim") or hidden // config["num_attention_heads"]
    q, kv = config["num_attention_heads"] * head_dim, config["num_key_value_heads"] * head_dim
    bf = "BF16"
    tensors: list[Tensor] = [("model.embed_tokens.weight", bf, (config["vocab_size"], hidden))]
    for i in range(layers):
        p = f"model.layers.{i}."
        tensors += [(p + "input_layernorm.weight", bf, (hidden,)),
                    (p + "post_attention_layernorm.weight", bf, (hidden,)),
                    (p + "self_attn.q_proj.weight", bf, (q, hidden)), (p + "self_attn.k_proj.weight", bf, (kv, hidden)),
                    (p + "self_attn.v_proj.weight", bf, (kv, hidden)), (p + "self_attn.o_proj.weight", bf, (hidden, q)),
                    (p + "mlp.gate_proj.weight", bf, (ffn, hidden)), (p + "mlp.up_proj.weight", bf, (ffn, hidden)),
                    (p + "mlp.down_proj.weight", bf, (hidden, ffn))]
        if qk_norm:
            tensors += [(p + "self_attn.q_norm.weight", bf, (head_dim,)),
                        (p + "self_attn.k_norm.weight", bf, (head_dim,))]
    return [*tensors, ("model.norm.weight", bf, (hidden,))]


# commit hashes of the fake repositories below (made up: only their form matters, 40 hex digits)
QWEN_COMMITS = ("c1899de289a04d12100db370d81485cdf75e47ca", "e6de91484c29aa9480d55605af694f39b081c455")


def qwen3_0_6b() -> Repo:
    """Qwen/Qwen3-0.6B at two commits: ``main`` at the second, the tag ``v1`` at the first."""
    raw = (CONFIGS / "Qwen--Qwen3-0.6B.json").read_bytes()
    files: dict[str, bytes | Shard] = {"config.json": raw,
                                       "model.safetensors": shard(dense_tensors(json.loads(raw), qk_norm=True))}
    return Repo({c: dict(files) for c in QWEN_COMMITS}, {"main": QWEN_COMMITS[1], "v1": QWEN_COMMITS[0]})


def llama_3_2_1b() -> Repo:
    """meta-llama/Llama-3.2-1B: gated, as on the Hub (its config as the catalog copies it)."""
    config = yaml.safe_load((ROOT / "specs" / "models" / "llama-3.2-1b.yaml").read_text(encoding="utf-8"))["config"]
    files: dict[str, bytes | Shard] = {"config.json": json.dumps(config).encode(),
                                       "model.safetensors": shard(dense_tensors(config, qk_norm=False))}
    commit = "4e20de362430cd3b72f300e6b0f18e50e7166e08"
    return Repo({commit: files}, {"main": commit}, gated=True)


def gguf_only() -> Repo:
    """A repository with no config.json (as a GGUF-only one is)."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    return Repo({commit: {"README.md": b"# weights in GGUF only\n"}}, {"main": commit})


# NVIDIA's modelopt export keeps its format in hf_quant_config.json, not in config.json: the keys and values of the one
# TensorRT-LLM ships (peaceh-nv/TensorRT-LLM@8d8be36b538750351b725de99a2606342f982b59, hf_quant_config.json, an
# NVFP4 DeepSeek-R1 export by modelopt 0.23.0), its exclude_modules cut to the two that Qwen3 also has.
MODELOPT_QUANT = {"producer": {"name": "modelopt", "version": "0.23.0"},
                  "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16,
                                   "exclude_modules": ["lm_head", "model.embed_tokens"]}}


def modelopt_only() -> Repo:
    """A repository whose format only hf_quant_config.json says (no safetensors files): Qwen3-0.6B's config.json
    beside `MODELOPT_QUANT`, as a modelopt export lays them out."""
    commit = "89abcdef0123456789abcdef0123456789abcdef"
    files: dict[str, bytes | Shard] = {"config.json": (CONFIGS / "Qwen--Qwen3-0.6B.json").read_bytes(),
                                       "hf_quant_config.json": json.dumps(MODELOPT_QUANT).encode()}
    return Repo({commit: files}, {"main": commit})


def repos() -> dict[str, Repo]:
    """Every repository the fake Hub serves, by id."""
    return {"openai/gpt-oss-120b": gpt_oss_120b(), "Qwen/Qwen3-0.6B": qwen3_0_6b(),
            "meta-llama/Llama-3.2-1B": llama_3_2_1b(), "someone/gguf-only": gguf_only(),
            "someone/qwen3-0.6b-nvfp4": modelopt_only()}
