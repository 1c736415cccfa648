#!/usr/bin/env python3
"""Count the parameters Hugging Face transformers instantiates for each catalog model.

Run by hand, never by the package. Last run with transformers 5.24.0 and torch 2.13.0+cpu, set up outside the
repository:

    python3 -m venv /work/hfvenv && /work/hfvenv/bin/pip install torch==2.13.0 transformers pyyaml
    /work/hfvenv/bin/python tools/hf_param_count.py            # every specs/models/*.yaml
    /work/hfvenv/bin/python tools/hf_param_count.py --write    # ... and store hf_params in each file
    /work/hfvenv/bin/python tools/hf_param_count.py specs/models/gpt2.yaml

Each model is built from its `config:` mapping on the `meta` device: no weights, no network, no memory for tensors.
The count is sum(p.numel() for p in model.parameters()); parameters() yields a tied weight once, so tied
embeddings are counted once. With --write, the file gets `hf_params: <count>` (right after `aliases`) and a
`sources` entry naming the transformers version; the rest of the file is left byte-for-byte as it was.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import torch
import transformers
import yaml
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

REPO_ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = REPO_ROOT / "specs" / "models"

# Which Auto class builds the model for a model_type. The default is AutoModelForCausalLM: the catalog's decoders are
# used for generation, so their count includes the LM head (once, if tied). BERT is an encoder without a causal-LM
# head; its catalog count is the bare BertModel (embeddings + encoder + pooler), which is what `bert-base-uncased`
# means when people quote ~110M parameters. BertForMaskedLM would add the MLM transform (dense + LayerNorm) and the
# output bias, and BertLMHeadModel (the causal variant) would drop the pooler, so neither matches that number.
AUTO_CLASS_BY_MODEL_TYPE: dict[str, type] = {
    "bert": AutoModel,
}
DEFAULT_AUTO_CLASS: type = AutoModelForCausalLM

# Keys that are not configuration fields: metadata some configs carry, which for_model must not receive.
IGNORED_CONFIG_KEYS: frozenset[str] = frozenset({"model_type", "transformers_version", "_name_or_path", "auto_map",
                                                 "quantization_config"})  # the count is the architecture's

SOURCES_TAG = "hf_params:"


def load_spec(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise ValueError(f"{path}: no `config:` mapping")
    return data


# model_types transformers does not register, and the class that builds the same modules.
MODEL_TYPE_ALIASES: dict[str, str] = {
    "kimi_k2": "deepseek_v3",  # Kimi-K2's remote code is DeepSeek-V3's (its config.json auto_map)
    "RefinedWeb": "falcon",  # the 2023 Falcon checkpoints; FalconConfig reads their n_head/n_layer names
    "RefinedWebModel": "falcon",
}
# Multimodal wrappers: the nested text config (the language model) and the model_type it builds with.
TEXT_CONFIG_KEYS = ("text_config", "language_config", "llm_config")
TEXT_MODEL_TYPE = {"gemma3": "gemma3_text", "llama4": "llama4_text", "qwen3_5": "qwen3_5_text",
                   "qwen3_5_moe": "qwen3_5_moe_text", "mistral3": "mistral", "kimi_k25": "kimi_k2",
                   "mllama": "mllama_text_model"}


# Multimodal wrappers whose towers the estimator counts (estimator/catalog/towers.py): the whole model is built,
# vision or audio tower and projector included, by its transformers class.
FULL_MODEL_CLASSES = {"qwen3_vl": "Qwen3VLForConditionalGeneration",
                      "qwen3_vl_moe": "Qwen3VLMoeForConditionalGeneration",
                      "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
                      "mistral3": "Mistral3ForConditionalGeneration",
                      "voxtral": "VoxtralForConditionalGeneration",
                      "qwen3_5": "Qwen3_5ForConditionalGeneration",
                      "qwen3_5_moe": "Qwen3_5MoeForConditionalGeneration",
                      "gemma3": "Gemma3ForConditionalGeneration",
                      "mllama": "MllamaForConditionalGeneration",
                      "exaone4_5": "Exaone4_5_ForConditionalGeneration"}
# Text models transformers builds only inside their wrapper (no causal-LM class): the bare model plus an LM head.
# Text models with a causal-LM class that no Auto class maps their config to.
TEXT_MODEL_CLASSES = {"mllama_text_model": "MllamaForCausalLM"}
BARE_TEXT_MODELS = {"qwen3_vl_text", "qwen3_vl_moe_text", "qwen2_5_vl_text"}


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's config: the config itself, or a wrapper's nested text config (which inherits the
    wrapper's tie_word_embeddings when it has none, as the composite model ties them)."""
    for key in TEXT_CONFIG_KEYS:
        nested = config.get(key)
        if isinstance(nested, dict):
            inner = dict(nested)
            inner.setdefault("model_type", TEXT_MODEL_TYPE.get(str(config.get("model_type")), ""))
            if "tie_word_embeddings" in config:
                inner.setdefault("tie_word_embeddings", config["tie_word_embeddings"])
            return inner
    return config


def build_config(config: dict[str, Any]) -> transformers.PretrainedConfig:
    config = text_config(config)
    model_type = MODEL_TYPE_ALIASES.get(str(config.get("model_type")), config.get("model_type"))
    if not isinstance(model_type, str):
        raise ValueError("config has no model_type")
    fields = {k: v for k, v in config.items() if k not in IGNORED_CONFIG_KEYS}
    if str(config.get("model_type")).startswith("RefinedWeb"):  # the 2023 Falcon code's own field names
        for old, new in (("n_head", "num_attention_heads"), ("n_layer", "num_hidden_layers"),
                         ("n_head_kv", "num_kv_heads")):
            if old in fields:
                fields[new] = fields.pop(old)
    if config.get("model_type") == "RefinedWeb":  # RWForCausalLM always ran the new decoder layout
        fields.setdefault("new_decoder_architecture", True)
    return AutoConfig.for_model(model_type, **fields)


def count_file(path: Path) -> int:
    """The meta-device count of a config.json file (tests/data/configs/*.json)."""
    import json

    return count_params(json.loads(path.read_text()))


def count_params(config: dict[str, Any]) -> int:
    wrapper = str(config.get("model_type"))
    if wrapper in FULL_MODEL_CLASSES:
        full = AutoConfig.for_model(wrapper, **{k: v for k, v in config.items() if k not in IGNORED_CONFIG_KEYS})
        with torch.device("meta"):
            whole = getattr(transformers, FULL_MODEL_CLASSES[wrapper])(full)
        return sum(p.numel() for p in whole.parameters())
    cfg = build_config(config)
    if cfg.model_type in BARE_TEXT_MODELS:
        with torch.device("meta"):
            bare = AutoModel.from_config(cfg)
        head = 0 if getattr(cfg, "tie_word_embeddings", False) else cfg.vocab_size * cfg.hidden_size
        return sum(p.numel() for p in bare.parameters()) + head
    with torch.device("meta"):
        if cfg.model_type in TEXT_MODEL_CLASSES:
            model = getattr(transformers, TEXT_MODEL_CLASSES[cfg.model_type])(cfg)
        else:
            model = AUTO_CLASS_BY_MODEL_TYPE.get(cfg.model_type, DEFAULT_AUTO_CLASS).from_config(cfg)
    return sum(p.numel() for p in model.parameters())


def sources_note() -> str:
    return f"{SOURCES_TAG} transformers {transformers.__version__} meta-device count (tools/hf_param_count.py)"


def _top_level_block_end(lines: list[str], start: int) -> int:
    """Index just past the top-level key at lines[start] and its indented / list continuation lines."""
    end = start + 1
    while end < len(lines) and (lines[end].startswith((" ", "-", "\t")) or not lines[end].strip()):
        end += 1
    return end


def write_hf_params(path: Path, count: int) -> None:
    lines = path.read_text().splitlines(keepends=True)

    # hf_params: replace in place, or insert right after the aliases block (after `name` if there are no aliases).
    idx = next((i for i, ln in enumerate(lines) if ln.startswith("hf_params:")), None)
    if idx is not None:
        lines[idx] = f"hf_params: {count}\n"
    else:
        anchor = next((i for i, ln in enumerate(lines) if ln.startswith("aliases:")), None)
        if anchor is None:
            anchor = next(i for i, ln in enumerate(lines) if ln.startswith("name:"))
        lines.insert(_top_level_block_end(lines, anchor), f"hf_params: {count}\n")

    # sources: one entry naming the transformers version behind the count; replaced if present, else appended.
    entry = f"- '{sources_note()}'\n"
    src = next((i for i, ln in enumerate(lines) if ln.startswith("sources:")), None)
    if src is None:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines += ["sources:\n", entry]
    else:
        end = _top_level_block_end(lines, src)
        old = next((i for i in range(src + 1, end) if re.match(rf"^- ['\"]?{SOURCES_TAG}", lines[i])), None)
        if old is not None:
            lines[old] = entry
        else:
            while end > src + 1 and not lines[end - 1].strip():
                end -= 1
            lines.insert(end, entry)

    path.write_text("".join(lines))
    check = load_spec(path)
    if check.get("hf_params") != count:
        raise RuntimeError(f"{path}: hf_params did not round-trip")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="model YAMLs (default: specs/models/*.yaml)")
    parser.add_argument("--write", action="store_true", help="store hf_params in each file")
    args = parser.parse_args(argv)

    files: list[Path] = args.files or sorted(MODELS_DIR.glob("*.yaml"))
    print(f"# transformers {transformers.__version__}, torch {torch.__version__}", file=sys.stderr)
    failures = 0
    for path in files:
        try:
            spec = load_spec(path)
            count = count_params(spec["config"])
        except Exception as exc:  # report and go on: one bad config must not hide the others
            failures += 1
            print(f"{path.stem}  ERROR {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        print(f"{spec.get('name', path.stem)}  {count}")
        if args.write:
            write_hf_params(path, count)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
