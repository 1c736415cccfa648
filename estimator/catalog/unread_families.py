"""Families people ask for that no reader here reads yet, and why: the one line that refuses them says what
their checkpoints have that the estimator's architecture cannot hold, so the refusal is never a bare "unsupported".

Each reason names the mechanism from transformers 5.25's configuration and modeling files of the family
(``models/<family>/``); specs/families/README.md ("Not read yet, and why") says the same at more length.
"""

from __future__ import annotations

_GEMMA4 = ("Gemma 4's full-attention layers have their own head width and K/V heads (global_head_dim), its last "
           "layers reuse earlier layers' K/V (num_kv_shared_layers); the estimator's attention layers share one "
           "shape")
_MINIMAX_M3 = ("MiniMax-M3 attends through a block-sparse indexer (index_n_heads, index_block_size, "
               "index_topk_blocks) beside dense and MoE layer schedules that no reader here takes")
NOT_READ: dict[str, str] = {
    "gemma4_text": _GEMMA4,
    "gemma4": _GEMMA4,
    "deepseek_v4": ("DeepSeek-V4 compresses each layer's K/V at its own rate (compress_rates) and adds "
                    "hyper-connections (hc_mult) and grouped low-rank outputs (o_groups): no attention layout the "
                    "estimator holds"),
    "minimax_m3": _MINIMAX_M3,
    "minimax_m3_vl": _MINIMAX_M3,
    "minimax_m3_vl_text": _MINIMAX_M3,
    "rwkv": ("RWKV has no attention: each block's time mixing keeps a per-layer recurrent state, and its blocks "
             "are no attention + MLP pair"),
    "t5": ("T5 is an encoder-decoder: its cross-attention cache grows with the prompt the encoder reads and its "
           "prefill is the encoder's forward, a cache term and a phase the decoder-only estimate has not"),
}


def unread_reason(model_type: object) -> str | None:
    """Why ``model_type`` is not read natively, for a family known to be asked for; None for any other."""
    return NOT_READ.get(model_type) if isinstance(model_type, str) else None
