"""Count the aten operations one transformers forward dispatches, per layer and outside the layers, by family.

The `hf` profile's host floor is a step's counted operations × the host's cost of one (`timing.host_dispatch_s`), and
the `hf-graph` profile's GPU floor the same count × a kernel's launch and tail (`timing.fixed_gpu_s`); a family
without a count falls back to a figure per layer, the same for every model of that depth. The counts of the five
families `lab/measure/random_architectures.py` draws were taken on the H200 (TorchDispatchMode around each measured
prefill and static-cache decode: `prefill_ops`, `decode_ops` in tests/data/measured/random). This script counts the
same calls the same way on the CPU, random weights, for those five (it must reproduce their profile counts exactly,
`--check`) and for the catalog's other families, each from one catalog model's config.json with its widths made
tiny (the operations do not depend on the widths): one layer is the difference of a 4-layer and a 2-layer model over
2 (of two and one periods of a family whose layers repeat a pattern, `PERIODS`); the rest of the shorter model's count
is outside the layers. Decode is one token at position 32 of a StaticCache, with as
many KV heads as query heads, then with grouped KV heads.

    pip install torch==2.13.0 transformers==5.17.0 pyyaml   # the transformers the hf profiles describe
    python -m lab.measure.count_eager_ops > tests/data/measured/eager-ops-cpu.json
    python -m lab.measure.count_eager_ops --check tests/data/measured/eager-ops-cpu.json   # against the profiles
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

import torch
import transformers

from estimator.live.host_cost import count_ops
from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)
from lab.measure.count_elementwise import SPECS
from lab.measure.random_architectures import random_config  # lab/measure/random_architectures.py, beside this file

MEASURED = ("llama", "qwen2", "mistral", "gemma2", "gpt2")  # counted on the H200 (tests/data/measured/random)
# families of the catalog, each from one model's config.json in specs/models/ with its widths replaced
CATALOG_FAMILIES = {"qwen3": "qwen3-8b", "gemma3_text": "gemma-3-1b", "phi3": "phi-3-mini", "olmo2": "olmo-2-7b",
                    "falcon": "falcon-7b", "mixtral": "mixtral-8x7b", "qwen3_moe": "qwen3-30b-a3b",
                    "deepseek_v2": "deepseek-v2-lite", "deepseek_v3": "deepseek-v3", "glm4_moe": "glm-4.7",
                    "olmo3": "olmo-3.1-32b", "minimax_m2": "minimax-m2.5", "ministral3": "devstral-small-2-24b",
                    "exaone4": "exaone-4.0-32b"}
# Not counted: gpt_oss (transformers 5.17 gives it no SDPA path), llama4_text (its layers' mean over a period is not a
# whole number), the multimodal text towers (no causal-LM class of their own) and the hybrids (linear attention, Mamba),
# whose layers differ by kind.
# families whose layers repeat a pattern of kinds (sliding and full attention): counted over one and two whole periods,
# so a layer is the period's mean (exact for a depth that is a whole number of periods) and the operations outside the
# layers include every kind's mask
PERIODS = {"olmo3": 4, "exaone4": 4, "gemma3_text": 6}
# fields of a catalog config that would pin the tiny model to the original's shape or tokens
DROPPED = ("architectures", "torch_dtype", "pad_token_id", "bos_token_id", "eos_token_id",
           "auto_map", "quantization_config")
HIDDEN, HEADS, VOCAB, PROMPT, POSITION = 256, 4, 512, 16, 32


def depths(family: str) -> tuple[int, int]:
    period = PERIODS.get(family, 2)
    return period, 2 * period


def _config(family: str, layers: int, kv_heads: int) -> dict[str, Any]:
    if family in MEASURED:
        config = random_config(random.Random(0), family, HIDDEN, layers)
    else:
        import yaml

        spec = yaml.safe_load((SPECS / f"{CATALOG_FAMILIES[family]}.yaml").read_text(encoding="utf-8"))
        found = spec["config"].get("text_config", spec["config"])  # a multimodal model's language model
        config = {k: v for k, v in found.items() if k not in DROPPED}
        config.update(model_type=family, pad_token_id=0)
        if "layer_types" in config:  # the model's own pattern of layer kinds, cut to this depth
            config["layer_types"] = [config["layer_types"][i % len(config["layer_types"])] for i in range(layers)]
    if family == "gpt2":
        config.update(n_embd=HIDDEN, n_head=HEADS, n_layer=layers, vocab_size=VOCAB)
        return config
    config.update(hidden_size=HIDDEN, num_attention_heads=HEADS, vocab_size=VOCAB, num_hidden_layers=layers)
    if family == "falcon":  # one KV head (multi_query) or as many as the query heads; head_dim is derived
        config.update(multi_query=kv_heads == 1, num_kv_heads=kv_heads, new_decoder_architecture=False)
    else:
        config.update(num_key_value_heads=kv_heads, head_dim=HIDDEN // HEADS, intermediate_size=512)
    for key in ("moe_intermediate_size", "expert_intermediate_size"):
        if key in config:
            config[key] = 128
    if "first_k_dense_replace" in config:  # every counted layer a MoE layer (the dense ones are a few of many)
        config["first_k_dense_replace"] = 0
    if "kv_lora_rank" in config:
        config.update(kv_lora_rank=64, q_lora_rank=None, qk_rope_head_dim=16, qk_nope_head_dim=32, v_head_dim=32,
                      head_dim=16)
    return config


def forward_ops(family: str, layers: int, kv_heads: int) -> tuple[int, int]:
    """(prefill, decode) operations of one forward of the family's tiny model at ``layers`` depth."""
    built = transformers.AutoConfig.for_model(**_config(family, layers, kv_heads))
    built._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(built).to(torch.bfloat16).eval()
    ids = torch.randint(0, VOCAB, (1, PROMPT))
    token = torch.randint(0, VOCAB, (1, 1))
    position = torch.tensor([POSITION])
    cache = transformers.StaticCache(config=built, max_cache_len=POSITION + 8)

    def prefill() -> Any:
        return model(input_ids=ids, use_cache=False, logits_to_keep=1)

    def decode() -> Any:
        return model(input_ids=token, past_key_values=cache, cache_position=position, use_cache=True,
                     position_ids=position.expand(1, 1))

    with torch.inference_mode():
        prefill(), decode()  # first calls build caches and masks once
        return count_ops(prefill), count_ops(decode)


def family_counts(family: str) -> dict[str, list[float]]:
    """``per_layer``: [prefill, decode with as many KV heads as query heads, decode with grouped KV heads] (one KV
    head for Falcon; latent attention has no grouped form); ``outside``: [prefill, decode] (the grouped model's)."""
    grouped = {"falcon": 1, "deepseek_v2": HEADS, "deepseek_v3": HEADS}.get(family, 2)
    short, long = depths(family)
    found = {kv: {depth: forward_ops(family, depth, kv) for depth in (short, long)} for kv in (HEADS, grouped)}

    def per_layer(kv: int, phase: int) -> float:
        return (found[kv][long][phase] - found[kv][short][phase]) / (long - short)

    layers = [per_layer(grouped, 0), per_layer(HEADS, 1), per_layer(grouped, 1)]
    outside = [found[grouped][short][phase] - short * per_layer(grouped, phase) for phase in (0, 1)]
    return {"per_layer": layers, "outside": outside}


def check(path: Path) -> int:
    """Compare the counts in ``path`` with the hf profile's: the measured families must match exactly."""
    from estimator import default_catalog

    counted = json.loads(path.read_text(encoding="utf-8"))["families"]
    hf = default_catalog().profiles.get("hf")
    bad = 0
    for family, found in counted.items():
        shipped = (list(hf.eager_ops_per_layer.get(family, ())), list(hf.eager_ops_outside_layers.get(family, ())))
        same = shipped == (found["per_layer"], found["outside"])
        bad += not same
        print(f"{family:12} counted {found['per_layer']} + {found['outside']}  profile {shipped[0]} + {shipped[1]}"
              f"  {'same' if same else 'DIFFERENT'}")
    return 1 if bad else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", type=Path, help="compare a counts file with the shipped hf profile")
    args = parser.parse_args()
    if args.check:
        if not args.check.is_file():
            parser.error(f"no such file: {args.check}")
        sys.exit(check(args.check))
    out: dict[str, Any] = {"torch": torch.__version__, "transformers": transformers.__version__, "families": {}}
    for family in (*MEASURED, *CATALOG_FAMILIES):
        out["families"][family] = family_counts(family)
        print(family, out["families"][family], file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
