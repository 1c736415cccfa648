"""Measure what caches, recurrent state and MXFP4 experts hold on the live GPU, random weights at reduced depth, as
JSON lines.

    python -m lab.measure.memory_state --out DIR            # on the GPU (bf16)
    python -m lab.measure.memory_state --out /tmp/x --tiny  # the same code paths on the CPU, toy widths

Each case builds a published config.json (tests/data/configs) with fewer layers, random weights and no
quantization_config, runs one prefill of ``batch`` × ``tokens`` with the cache on, and records what the cache holds:
the bytes of every tensor in it, layer by layer (``cache_layers``), summed into attention K/V (``kv_bytes``: keys and
values, of cross-attention layers too) and conv + recurrent state (``state_bytes``: Mamba-2 / gated-DeltaNet
layers), together with the parameters' bytes on the device. `lab/accuracy/state_report.py`
predicts the same terms with the estimator from the row's ``config`` (docs/accuracy.md). Cases:

- gpt-oss-20b, 4 layers: attention sinks, sliding (128) and full layers alternating; tokens past the window.
- Qwen3-Next-80B-A3B, 4 layers: three gated-DeltaNet layers and one full-attention layer.
- Nemotron-H-56B, 4 layers ``M*M-``: Mamba-2 state beside one attention layer's KV.
- Llama-3.2-90B-Vision, 5 text layers (one cross-attention layer), 2 + 1 vision layers: one image of 4 tiles.
- Llama-4-Scout, 4 text layers (three chunked RoPE layers, one NoPE full layer), 4 experts instead of 16: one
  sequence of 10,240 tokens, past the published ``attention_chunk_size`` of 8,192.
- gpt-oss-20b with MXFP4 experts, 4 layers: no prefill. transformers' MXFP4 expert module
  (``integrations.mxfp4.Mxfp4GptOssExperts``) is built on the device in place of every bf16 expert module, and its
  parameters' bytes are recorded (``kind: mxfp4``). Its forward, and the swizzle that turns the checkpoint's scales
  into the matmul's layout, come from the Hugging Face hub kernel ``kernels-community/gpt-oss-triton-kernels``
  (``replace_with_mxfp4_linear`` fetches it with ``hub_kernels.get_kernel``), which needs the ``kernels`` package
  and the network: the device has neither, so only the storage transformers allocates is measured.

A case that fails is a row with ``error``. ``--cases`` runs some of them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "data" / "configs"


def _raw(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return config


def _load(name: str) -> dict[str, Any]:
    config = _raw(name)
    config.pop("quantization_config", None)
    return config


def _gpt_oss(tiny: bool) -> dict[str, Any]:
    c = _load("openai--gpt-oss-20b")
    c.update(num_hidden_layers=4, layer_types=c["layer_types"][:4])
    if tiny:
        c.update(hidden_size=64, intermediate_size=64, num_local_experts=4, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, vocab_size=512, sliding_window=16)
    return c


def _qwen3_next(tiny: bool) -> dict[str, Any]:
    c = _load("Qwen--Qwen3-Next-80B-A3B-Thinking")
    c.update(num_hidden_layers=4, layer_types=None)  # full_attention_interval 4: layers 0-2 DeltaNet, 3 full
    c.pop("layer_types")
    if tiny:
        c.update(hidden_size=64, intermediate_size=64, moe_intermediate_size=32, shared_expert_intermediate_size=32,
                 num_experts=4, num_experts_per_tok=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
                 linear_value_head_dim=16, vocab_size=512)
    return c


def _nemotron_h(tiny: bool) -> dict[str, Any]:
    c = _load("nvidia--Nemotron-H-56B-Base-8K")
    c.update(num_hidden_layers=4, hybrid_override_pattern="M*M-")
    if tiny:
        c.update(hidden_size=64, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 mamba_num_heads=8, mamba_head_dim=16, ssm_state_size=16, n_groups=2, vocab_size=512)
    return c


def _mllama(tiny: bool) -> dict[str, Any]:
    c = _load("meta-llama--Llama-3.2-90B-Vision-Instruct")
    c["text_config"].update(num_hidden_layers=5, cross_attention_layers=[3])
    c["vision_config"].update(num_hidden_layers=2, num_global_layers=1, intermediate_layers_indices=[0, 1])
    c["vision_config"]["vision_output_dim"] = 3 * c["vision_config"]["hidden_size"]
    if tiny:
        c["text_config"].update(hidden_size=64, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
                                vocab_size=512, pad_token_id=0, bos_token_id=1, eos_token_id=2)
        c["vision_config"].update(hidden_size=32, intermediate_size=64, attention_heads=2, image_size=56,
                                  vision_output_dim=96)
        c["image_token_index"] = 511 - 8
    return c


def _llama4(tiny: bool) -> dict[str, Any]:
    c: dict[str, Any] = _load("meta-llama--Llama-4-Scout-17B-16E-Instruct")["text_config"]
    c.update(num_hidden_layers=4, num_local_experts=4)  # no_rope_layers default: layers 0-2 chunked, 3 NoPE full
    if tiny:
        c.update(hidden_size=64, intermediate_size=64, intermediate_size_mlp=128, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, vocab_size=512, attention_chunk_size=16)
    return c


def _gpt_oss_mxfp4(tiny: bool) -> dict[str, Any]:
    c = _gpt_oss(tiny)
    c["quantization_config"] = _raw("openai--gpt-oss-20b")["quantization_config"]
    return c


CASES = {"gpt-oss-20b@4": _gpt_oss, "qwen3-next-80b@4": _qwen3_next, "nemotron-h-56b@4": _nemotron_h,
         "llama-3.2-90b-vision@5": _mllama, "llama-4-scout@4": _llama4, "gpt-oss-20b-mxfp4@4": _gpt_oss_mxfp4}
# (batch, tokens) on the GPU and in --tiny, where a case needs its own: Llama 4's chunks are 8,192 tokens
SHAPES = {"llama-4-scout@4": ((1, 10_240), (1, 40))}


def _tensors(obj: Any, seen: set[int]) -> list[tuple[str, Any]]:
    """(attribute path, tensor) of every tensor reachable in a cache object (lists, dicts and attributes)."""
    import torch

    out: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any]] = [("cache", obj)]
    while stack:
        path, value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            out.append((path, value))
        elif isinstance(value, (list, tuple)):
            stack += [(f"{path}[{i}]", v) for i, v in enumerate(value)]
        elif isinstance(value, dict):
            stack += [(f"{path}.{k}", v) for k, v in value.items()]
        elif hasattr(value, "__dict__") and not isinstance(value, (str, int, float, bool, type)):
            stack += [(f"{path}.{k}", v) for k, v in vars(value).items()]
    return out


# a cache layer's attention K and V (DynamicLayer, DynamicSlidingWindowLayer; older hybrid caches' lists)
KV_NAMES = ("keys", "values", "key_cache", "value_cache")
STATE_NAMES = ("conv_states", "recurrent_states", "ssm_states")  # Mamba-2 / gated-DeltaNet layers' fixed state


def _split(cache: Any) -> tuple[int, int, list[dict[str, int]]]:
    """(K/V bytes, conv + recurrent state bytes, bytes per tensor name of each cache layer) of ``cache``; K/V of a
    cross-attention layer (its keys are the image tokens) is in its layer's entry, told apart by the report."""
    kv = state = 0
    layers: list[dict[str, int]] = []
    for layer in getattr(cache, "layers", [cache]):
        names: dict[str, int] = {}
        for path, tensor in _tensors(layer, set()):
            leaf = [part for part in re.split(r"[.\[\]]", path) if part and not part.isdigit()][-1]
            names[leaf] = names.get(leaf, 0) + tensor.numel() * tensor.element_size()
        kv += sum(names.get(n, 0) for n in KV_NAMES)
        state += sum(names.get(n, 0) for n in STATE_NAMES)
        layers.append(names)
    return kv, state, layers


def _inputs(name: str, config: dict[str, Any], batch: int, tokens: int, device: str) -> dict[str, Any]:
    import torch

    vocab = config.get("text_config", config)["vocab_size"]
    ids = torch.randint(0, vocab - 8, (batch, tokens), device=device)
    if not name.startswith("llama-3.2"):
        return {"input_ids": ids}
    v = config["vision_config"]
    tiles, side = v["max_num_tiles"], v["image_size"]
    ids[:, 0] = config["image_token_index"]
    return {"input_ids": ids,
            "pixel_values": torch.randn(batch, 1, tiles, 3, side, side, device=device, dtype=torch.bfloat16),
            "aspect_ratio_ids": torch.full((batch, 1), 6, device=device),  # (2, 2): all four tiles
            "aspect_ratio_mask": torch.ones(batch, 1, tiles, device=device, dtype=torch.long),
            "cross_attention_mask": torch.ones(batch, tokens, 1, tiles, device=device, dtype=torch.long)}


def measure(name: str, config: dict[str, Any], batch: int, tokens: int, device: str) -> dict[str, Any]:
    import torch
    import transformers

    full = config["model_type"] == "mllama"
    cls = transformers.MllamaForConditionalGeneration if full else transformers.AutoModelForCausalLM
    cfg = transformers.AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items()
                                                                    if k not in ("model_type", "auto_map")})
    torch.manual_seed(0)
    with torch.device(device):
        model = (cls(cfg) if full else cls.from_config(cfg)).to(torch.bfloat16).eval()
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    start = time.perf_counter()
    with torch.no_grad():
        out = model(**_inputs(name, config, batch, tokens, device), use_cache=True)
    if device == "cuda":
        torch.cuda.synchronize()
    if out.past_key_values is None:
        raise RuntimeError("the forward returned no cache")
    kv, state, layers = _split(out.past_key_values)
    return {"kind": "state", "case": name, "config": config, "batch": batch, "tokens": tokens, "dtype": "bf16",
            "weights_bytes": weights, "kv_bytes": kv, "state_bytes": state, "cache_layers": layers,
            "cache_class": type(out.past_key_values).__name__, "prefill_s": time.perf_counter() - start,
            "torch": torch.__version__, "transformers": transformers.__version__}


def measure_mxfp4(name: str, config: dict[str, Any], device: str) -> dict[str, Any]:
    """The bytes transformers' MXFP4 expert modules hold on ``device``, built in place of the bf16 experts as
    ``replace_with_mxfp4_linear`` does, without its hub-kernel fetch; no forward (it needs that kernel)."""
    import torch
    import transformers
    from transformers.integrations import mxfp4
    from transformers.utils import is_kernels_available

    cfg = transformers.AutoConfig.for_model("gpt_oss", **{k: v for k, v in config.items()
                                                          if k not in ("model_type", "quantization_config")})
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(cfg).to(torch.bfloat16).eval()
        for path, module in list(model.named_modules()):
            if type(module).__name__ == "GptOssExperts":
                model.set_submodule(path, mxfp4.Mxfp4GptOssExperts(cfg))
    by_dtype: dict[str, int] = {}
    blocks = expert_bias = 0
    for path, p in model.named_parameters():
        size = p.numel() * p.element_size()
        by_dtype[str(p.dtype).removeprefix("torch.")] = by_dtype.get(str(p.dtype).removeprefix("torch."), 0) + size
        if ".experts." in path:
            blocks += size if p.dtype == torch.uint8 else 0
            expert_bias += size if p.dtype != torch.uint8 else 0
    return {"kind": "mxfp4", "case": name, "config": config, "weights_bytes": sum(by_dtype.values()),
            "bytes_by_dtype": by_dtype, "expert_blocks_bytes": blocks, "expert_bias_bytes": expert_bias,
            "on_device": str(next(model.parameters()).device), "kernels_package": is_kernels_available(),
            "torch": torch.__version__, "transformers": transformers.__version__}


def _row(name: str, tiny: bool, device: str) -> dict[str, Any]:
    config = CASES[name](tiny)
    if tiny:  # the published token ids lie outside the toy vocabulary
        config.get("text_config", config).update(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    batch, tokens = SHAPES.get(name, ((2, 1024), (2, 40)))[tiny]
    try:
        if name.startswith("gpt-oss-20b-mxfp4"):
            return measure_mxfp4(name, config, device)
        return measure(name, config, batch, tokens, device)
    except Exception as error:  # a failed case is a row; the next case still runs
        return {"kind": "state", "case": name, "config": config, "batch": batch, "tokens": tokens,
                "error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()[-2000:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tiny", action="store_true", help="toy widths on the CPU")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    device = "cpu" if args.tiny else "cuda"
    names = args.cases.split(",")
    unknown = [n for n in names if n not in CASES]
    if unknown:
        sys.exit(f"error: unknown case {unknown[0]!r} (known: {', '.join(CASES)})")
    with (args.out / "state.jsonl").open("w") as f:
        for name in names:
            row = _row(name, args.tiny, device)
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(json.dumps({k: v for k, v in row.items() if k not in ("config", "trace")}), flush=True)
            if device == "cuda":
                import torch

                torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
