"""Which fields of a config.json a reader used, and which it left unread that could change the architecture.

A reader (a family file read by `estimator.catalog.family_reader`, or a code reader in `estimator.catalog.hf_config`)
reads the config through `Seen`, which records every key looked up. What is left is either a field no reader needs
(`IGNORED`: token ids, dropout, initialisation, rope parameters, tokenizer and runtime switches — they shape no
tensor and no cache — plus the family's own ``ignores``), or one the reader does not know. An unknown field whose name
says it could shape tensors or caches (`ARCHITECTURAL`: a layer-kind list, a latent width, a per-layer override, an
expert or head count) is named in the report's warnings (`unread_fields`), never dropped in silence.

`SIZE_FIELDS` are the fields that set a model's size: a config that leaves one out is refused, naming it, rather
than read as the 7B shape transformers' configuration class defaults to; a family lists its own in ``required``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

# Generic fields of transformers' PretrainedConfig and of the configs checkpoints publish that shape no tensor and
# no cache: token ids, training-time regularisation and initialisation, numerics of norms and positions (the rope
# parameters change values, not shapes), generation and runtime switches, tokenizer and hub bookkeeping.
IGNORED: frozenset[str] = frozenset({
    "_name_or_path", "architectures", "auto_map", "model_type", "transformers_version", "torch_dtype", "dtype",
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id", "unk_token_id",
    "image_token_id", "image_token_index", "video_token_id", "vision_start_token_id", "vision_end_token_id",
    "initializer_range", "initializer_factor", "init_std", "attention_dropout", "hidden_dropout", "dropout",
    "embd_pdrop", "resid_pdrop", "attn_pdrop", "hidden_dropout_prob", "attention_probs_dropout_prob",
    "classifier_dropout", "mlp_dropout", "activation_dropout", "use_cache", "tie_encoder_decoder",
    "rope_theta", "rope_scaling", "rope_parameters", "rope_type", "rope_interleave", "partial_rotary_factor",
    "rotary_pct", "rotary_emb_base", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_eps",
    "norm_epsilon", "tokenizer_class", "tokenizer_config", "chat_template", "quantization_config",
    "output_router_logits", "router_aux_loss_coef", "router_z_loss_coef", "aux_loss_alpha", "seq_aux",
    "output_attentions", "output_hidden_states", "return_dict", "is_encoder_decoder", "use_return_dict",
    "pretraining_tp", "num_logits_to_keep", "logits_to_keep", "attn_implementation", "_attn_implementation",
    "_attn_implementation_autoset", "use_flash_attn", "use_flash_attention_2", "use_sdpa", "use_mamba_kernels",
    "task_specific_params", "id2label", "label2id", "problem_type", "finetuning_task", "max_length",
    "keys_to_ignore_at_inference", "num_labels",
    # generation settings PretrainedConfig once serialised into every config (Kimi-K2.5, mllama carry them)
    "chunk_size_feed_forward", "cross_attention_hidden_size", "encoder_no_repeat_ngram_size", "no_repeat_ngram_size",
    "num_beam_groups", "num_beams", "num_return_sequences", "pruned_heads",
    # expert-parallel size of the training run (DeepSeek, Kimi): a deployment choice, not a shape
    "ep_size",
    # multi-token-prediction modules: transformers builds none of them (loading drops their weights), so the estimate
    # is the model as transformers serves it, without speculative heads
    "num_nextn_predict_layers", "mtp_num_hidden_layers", "mtp_transformer_layers", "num_mtp_modules",
    "mtp_layers_block_type", "mtp_hybrid_override_pattern",
})

# Names that could change the architecture: a layer-kind list, a latent or rank width, experts, heads, windows,
# sizes and counts, Mamba and linear-attention parts, an indexer.
ARCHITECTURAL = re.compile(
    r"layer|block|_types|latent|expert|moe|head|kv|window|rank|size|dim|num_|intermediate|indexer|mamba|ssm|conv|"
    r"linear")

# The canonical fields that set a model's size: a config must give them (transformers' defaults are one reference
# model's shape, not a default a real checkpoint relies on).
SIZE_FIELDS: frozenset[str] = frozenset({"hidden_size", "num_layers", "vocab_size", "num_heads", "intermediate_size"})


class Seen(Mapping[str, Any]):
    """A config mapping that records the keys a reader looks up (``seen``), present or not."""

    def __init__(self, data: Mapping[str, Any], seen: set[str] | None = None) -> None:
        self._data = dict(data)
        self.seen: set[str] = set() if seen is None else seen

    def __getitem__(self, key: str) -> Any:
        self.seen.add(key)
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.seen.add(key)
        return key in self._data

    def get(self, key: str, default: Any = None) -> Any:
        self.seen.add(key)
        return self._data.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def given(self, key: str) -> bool:
        """Whether the config itself holds ``key`` (not recorded: a question about the config, not a read)."""
        return self._data.get(key) is not None

    def merged(self, defaults: Mapping[str, Any]) -> Seen:
        """``defaults`` under this config, recording into the same ``seen``."""
        return Seen({**defaults, **self._data}, self.seen)


def unread(config: Mapping[str, Any], seen: Iterable[str], ignores: Iterable[str] = ()) -> tuple[str, ...]:
    """The fields of ``config`` no reader looked up, neither generic nor the family's own ``ignores``, whose names
    say they could change the architecture; sorted."""
    skip = set(seen) | IGNORED | set(ignores)
    return tuple(sorted(k for k in config if isinstance(k, str) and k not in skip and ARCHITECTURAL.search(k)))
