"""The part of docs/accuracy.md's *Memory* on families with state beyond a KV cache: what a prefill's cache held on
the H200 (rows of lab/measure/memory_state.py, tests/data/measured/state/*.jsonl) against the estimator's terms.

For each case, from the row's ``config``: weights (parameters × 2 B), the self-attention K/V cache for the row's
batch and tokens (`memory.kv_cache_bytes`: a sliding layer holds min(tokens, window)), and the fixed state per
sequence × batch (`state.state_bytes`: Mamba-2 and gated-DeltaNet conv + recurrent state, a cross-attention
layer's image K/V). The measured K/V of a cross-attention layer (mllama) is its cache layer's keys and values.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator.catalog.checkpoint_quant import checkpoint_format, read_quantization
from estimator.catalog.hf_config import architecture_from_config
from estimator.catalog.registry import default_catalog
from estimator.model.inventory import Role, param_count, tensor_inventory
from estimator.model.memory import kv_cache_bytes, weights_bytes
from estimator.model.state import state_bytes

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "measured" / "state"

INTRO = """\
### Recurrent state, cross-attention, sliding and chunked layers, MXFP4 experts

Published configs (tests/data/configs) at reduced depth with random weights, bf16, one prefill of 2 × 1,024
tokens with the cache on (Llama 4: 1 × 10,240, past its 8,192-token chunks), on the H200
(`lab/measure/memory_state.py`; torch and transformers as each row says): what the returned cache holds, tensor by
tensor, against the estimator's terms for the same config, batch and tokens (`lab/accuracy/state_report.py`).
MXFP4 experts (gpt-oss-20b-mxfp4): what transformers' MXFP4 expert modules hold on the GPU, built in place of the
bf16 ones, against the estimator's weights for the config's `quantization_config`; their forward was not run.
Not run: the MXFP4 forward and the load that swizzles the checkpoint's scales (both come from the Hugging Face hub
kernel `kernels-community/gpt-oss-triton-kernels`, fetched through the `kernels` package, which the device lacks
and could not download) and the Nemotron-Super per-layer widths (its configs are remote code, which the device's
transformers does not have).
"""

NOTES = """\
Where the two differ, and why (bf16 weights, self-attention K/V and the image K/V agree to the byte or to one
token a layer):

- **Recurrent state** (Qwen3-Next, Nemotron-H): the device had neither flash-linear-attention nor mamba_ssm, so
  transformers ran its reference PyTorch kernels, which hand back the delta-rule and SSM states in fp32: 4 B per
  element where the estimator holds the activation dtype (2 B), as it does whenever a config names no state dtype
  (`mamba_ssm_cache_dtype`, `mamba_ssm_dtype`; these two name none).
- **Conv state**: transformers keeps `conv_kernel` (4) inputs per channel; the estimator counts `conv_kernel − 1`
  (3), what vLLM's Mamba cache keeps (`estimator.model.state`). With 4 columns in bf16 and the recurrent state in
  fp32, the count is the measured one to the byte: Qwen3-Next 3 layers × (4 × 8,192 × 2 B + 32 × 128 × 128 × 4 B)
  × 2 sequences = 12,976,128; Nemotron-H 2 layers × (4 × 20,480 × 2 B + 256 × 64 × 256 × 4 B) × 2 = 67,764,224.
  What the estimator shows is a serving engine's state, not transformers' reference path.
- **Sliding layers** (gpt-oss): after a prefill past the window, transformers' sliding-window cache layer keeps
  `window − 1` = 127 tokens (2 × 8 KV heads × 64 × 127 × 2 B = 260,096 B of keys a layer, as measured); the
  estimator holds `window` = 128 (`memory.kv_cache_layers`): +0.09 % on the whole cache.
- **Chunked layers** (Llama 4): transformers caches a chunked layer as a sliding one of `attention_chunk_size`,
  keeping 8,191 tokens after 10,240 (8 KV heads × 128 × 8,191 × 2 B = 16,775,168 B of keys a layer, as measured);
  the estimator holds the chunk, 8,192, in each of the three chunked layers (+0.01 % on the whole cache), and all
  10,240 tokens in the NoPE full layer, as measured. A chunk needs at most its own earlier tokens, so both bound
  what decoding from here reads (the 2,048 tokens of the current chunk).
- **MXFP4 experts** (gpt-oss): transformers' expert module holds the packed 4-bit blocks, 0.5 B a weight, exactly
  the estimator's. It holds no scales: the hub kernel's load swizzles blocks and scales into triton tensors set on
  the module (the scales in its `*_precision_config`), not parameters, where the estimator counts the checkpoint's
  one 8-bit scale per 32 weights (99,532,800 B here). And it keeps the expert biases in fp32 where the estimator has
  the checkpoint's bf16 (2,211,840 B more). The estimator's weights are +2.36 %, all of it those two terms: it
  shows the checkpoint's storage, which a serving engine loads.
"""


def load(data: Path = DATA) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted(data.glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


def _cross_layers(config: dict[str, Any]) -> list[int]:
    text = config.get("text_config", {})
    listed = text.get("cross_attention_layers", []) if config.get("model_type") == "mllama" else []
    return [i for i in listed if i < text.get("num_hidden_layers", 0)]


def mxfp4_terms(row: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(term, predicted bytes, measured bytes) of a ``kind: mxfp4`` row: the expert blocks, their scales and the
    whole weights, for the config's own quantization_config."""
    config = {k: v for k, v in row["config"].items() if k != "quantization_config"}
    arch = architecture_from_config(config)
    quant = read_quantization(row["config"]["quantization_config"])
    fmt = checkpoint_format(quant, default_catalog().formats.get(quant.base))
    experts = sum(g.total for g in tensor_inventory(arch) if g.role is Role.EXPERT)
    return [("MXFP4 expert blocks (4 bits a weight)", experts // 2, row["expert_blocks_bytes"]),
            ("MXFP4 expert scales (8 bits per 32)", experts // 32, 0),
            ("weights (MXFP4 experts, the rest bf16)", weights_bytes(arch, fmt), row["weights_bytes"])]


def terms(row: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(term, predicted bytes, measured bytes) of one row."""
    if row.get("kind") == "mxfp4":
        return mxfp4_terms(row)
    arch = architecture_from_config(row["config"])
    bf16 = default_catalog().formats.get("bf16")
    batch, tokens = row["batch"], row["tokens"]
    layers = row["cache_layers"]
    cross = sum(layers[i].get("keys", 0) + layers[i].get("values", 0) for i in _cross_layers(row["config"]))
    out = [("weights", 2 * param_count(arch), row["weights_bytes"]),
           ("KV cache (self-attention)", kv_cache_bytes(arch, tokens, batch, bf16), row["kv_bytes"] - cross)]
    state = state_bytes(arch, batch, 2)
    if state or row["state_bytes"] or cross:
        name = "image K/V (cross-attention)" if cross else "conv + recurrent state"
        out.append((name, state, row["state_bytes"] + cross))
    return out


def _error(predicted: int, measured: int) -> str:
    return "—" if not measured else f"{(predicted - measured) / measured:+.2%}".replace("-", "−")


def section(data: Path = DATA) -> list[str]:
    out = [INTRO, "| case | term | predicted | measured | error |", "| --- | --- | ---: | ---: | ---: |"]
    failed = []
    for row in load(data):
        if row.get("error"):
            failed.append(f"- {row['case']}: {row['error']}")
            continue
        for term, predicted, measured in terms(row):
            out.append(f"| {row['case']} | {term} | {predicted:,} | {measured:,} | {_error(predicted, measured)} |")
    versions = sorted({f"torch {r['torch']}, transformers {r['transformers']}" for r in load(data) if "torch" in r})
    out += ["", f"Measured with {'; '.join(versions)}.", "", NOTES]
    if failed:
        out += ["Cases that failed on the device:", "", *failed, ""]
    return out


if __name__ == "__main__":
    print("\n".join(section(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA)))
