#!/usr/bin/env python3
"""Print the `defaults:` block of a specs/families file: what transformers' configuration class sets for the
fields that shape memory when a config.json leaves them out.

Run by hand with torch and transformers installed (see tools/hf_param_count.py):

    python tools/family_defaults.py gpt_oss olmo2
"""

from __future__ import annotations

import sys

import transformers
import yaml
from transformers import AutoConfig

# Fields the family readers look at (estimator/catalog/family_reader.py and specs/families/*.yaml).
FIELDS = (
    "vocab_size", "hidden_size", "intermediate_size", "intermediate_size_mlp", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "tie_word_embeddings", "attention_bias", "mlp_bias",
    "sliding_window", "sliding_window_pattern", "use_sliding_window", "max_window_layers", "num_local_experts",
    "num_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
    "shared_expert_intermediate_size", "n_shared_experts", "first_k_dense_replace", "decoder_sparse_step",
    "interleave_moe_layer_step", "no_rope_layer_interval", "attention_chunk_size", "use_qk_norm",
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "full_attention_interval", "mamba_num_heads", "mamba_head_dim", "ssm_state_size",
    "n_groups", "conv_kernel", "use_bias", "use_conv_bias", "moe_shared_expert_intermediate_size",
    "max_position_embeddings", "use_bias", "partial_rotary_factor",
)


def defaults(model_type: str) -> dict[str, object]:
    """Literal defaults only: a field that changes when the widths change (head_dim = hidden / heads, KV heads =
    heads) is derived in __post_init__, so the family reader derives it too and it stays out."""
    config = AutoConfig.for_model(model_type).to_dict()
    probes = [AutoConfig.for_model(model_type, hidden_size=2 * config["hidden_size"]).to_dict(),
              AutoConfig.for_model(model_type, num_attention_heads=2 * config["num_attention_heads"]).to_dict()]
    return {k: config[k] for k in FIELDS if k in config and not isinstance(config[k], (list, dict))
            and all(k in ("hidden_size", "num_attention_heads") or p.get(k) == config[k] for p in probes)}


def main(argv: list[str]) -> int:
    for model_type in argv:
        print(f"# {model_type}: transformers {transformers.__version__} "
              f"{type(AutoConfig.for_model(model_type)).__name__} defaults")
        print(yaml.safe_dump({"defaults": defaults(model_type)}, sort_keys=False, default_flow_style=None), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
