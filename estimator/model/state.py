"""Recurrent and indexed mixers: their tensors, and the memory they hold per sequence beside the KV cache.

A Mamba-2 layer and a gated-DeltaNet (linear-attention) layer keep a fixed state per sequence, whatever the
context: the last ``conv_kernel − 1`` inputs of their causal convolution and a recurrent matrix (the SSM state,
or the delta-rule state). The KV cache grows with tokens; this state does not. A Falcon-H1 layer runs attention and
a Mamba-2 mixer side by side, so it holds both. Tensor layouts follow transformers' ``NemotronHMamba2Mixer``,
``FalconH1Mixer`` and ``Qwen3NextGatedDeltaNet`` (tests compare the counts with
transformers on the meta device). DeepSeek-V3.2's indexer adds tensors to attention and one cached key per token.
A cross-attention layer (mllama) holds a fixed per-sequence state too: K and V of the image tokens it attends to.

Every state term is integer arithmetic on ``batch``, so it works the same for an int and a numpy int64 array.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from estimator.catalog.architecture import Architecture, Attention, GatedDeltaNet, Mamba2

Batch = TypeVar("Batch", int, Any)  # an int, or a numpy integer array (planning.sweep)
# (name, role value, numel, count): `estimator.model.inventory` turns these into its TensorGroups (it imports
# this module, so this one cannot import it back)
TensorRow = tuple[str, str, int, int]


def _group(name: str, role: str, numel: int, count: int) -> TensorRow:
    return (name, role, numel, count)


def _mamba2_tensors(m: Mamba2, hidden: int, layers: int, prefix: str) -> list[TensorRow]:
    in_width = 2 * m.inner + 2 * m.n_groups * m.state_size + m.num_heads  # z, x, B, C and dt
    out = [
        _group(f"{prefix}.in_proj.weight", "attention", hidden * in_width, layers),
        _group(f"{prefix}.conv1d.weight", "ssm", m.conv_dim * m.conv_kernel, layers),
        _group(f"{prefix}.dt_bias+A_log+D", "ssm", 3 * m.num_heads, layers),
        _group(f"{prefix}.out_proj.weight", "attention", m.inner * hidden, layers),
    ]
    if m.conv_bias:
        out.append(_group(f"{prefix}.conv1d.bias", "bias", m.conv_dim, layers))
    if m.proj_bias:
        out.append(_group(f"{prefix}.in_proj.bias", "bias", in_width, layers))
    if m.proj_bias if m.out_bias is None else m.out_bias:
        out.append(_group(f"{prefix}.out_proj.bias", "bias", hidden, layers))
    if m.gated_norm:
        out.append(_group(f"{prefix}.norm.weight", "norm", m.inner, layers))
    return out


def _deltanet_tensors(g: GatedDeltaNet, hidden: int, layers: int) -> list[TensorRow]:
    prefix = "layers.*.linear_attn"
    return [
        # in_proj_qkvz (Qwen3-Next) = in_proj_qkv + in_proj_z (Qwen3.5): q, k, v and the output gate z
        _group(f"{prefix}.in_proj_qkvz.weight", "attention", hidden * (2 * g.key_dim + 2 * g.value_dim), layers),
        _group(f"{prefix}.in_proj_ba.weight", "attention", hidden * 2 * g.num_v_heads, layers),
        _group(f"{prefix}.conv1d.weight", "ssm", g.conv_dim * g.conv_kernel, layers),
        _group(f"{prefix}.dt_bias+A_log", "ssm", 2 * g.num_v_heads, layers),
        _group(f"{prefix}.norm.weight", "norm", g.head_v_dim, layers),
        _group(f"{prefix}.out_proj.weight", "attention", g.value_dim * hidden, layers),
    ]


def mixer_tensors(arch: Architecture) -> list[TensorRow]:
    """Tensors of the Mamba-2 and gated-DeltaNet layers of ``arch`` (none for a pure transformer)."""
    out: list[TensorRow] = []
    if arch.mamba is not None and arch.mamba_layers:
        prefix = "layers.*.mamba" if arch.parallel_mamba else "layers.*.mixer"  # Falcon-H1 names it beside self_attn
        out += _mamba2_tensors(arch.mamba, arch.hidden_size, arch.mamba_layers, prefix)
    deltanet_layers = arch.mixer_count("gated_deltanet")
    if arch.linear_attention is not None and deltanet_layers:
        out += _deltanet_tensors(arch.linear_attention, arch.hidden_size, deltanet_layers)
    return out


def indexer_tensors(attn: Attention, hidden: int, layers: int, prefix: str) -> list[TensorRow]:
    """DeepSeek-V3.2 indexer (transformers DeepseekV32Indexer): wq_b from the query latent, one key head wk, a
    LayerNorm on the key, and per-head weights."""
    ix = attn.indexer
    if ix is None or attn.latent is None or attn.latent.q_lora_rank is None:
        return []
    width = ix.num_heads * ix.head_dim
    return [
        _group(f"{prefix}.indexer.wq_b.weight", "attention", attn.latent.q_lora_rank * width, layers),
        _group(f"{prefix}.indexer.wk.weight", "attention", hidden * ix.head_dim, layers),
        _group(f"{prefix}.indexer.k_norm.weight", "norm", ix.head_dim, layers),
        _group(f"{prefix}.indexer.k_norm.bias", "bias", ix.head_dim, layers),
        _group(f"{prefix}.indexer.weights_proj.weight", "attention", hidden * ix.num_heads, layers),
    ]


@dataclass(frozen=True)
class StateLayers:
    """The fixed per-sequence state of one kind of layer: how many layers, and elements per sequence per layer."""

    kind: Literal["mamba2", "gated_deltanet", "cross_attention"]
    layers: int
    conv_elements: int  # (conv_kernel − 1) × conv channels
    recurrent_elements: int  # SSM: heads × head_dim × state; DeltaNet: v heads × k dim × v dim; cross K and V
    element_bytes: int

    @property
    def bytes_per_sequence(self) -> int:
        return self.layers * (self.conv_elements + self.recurrent_elements) * self.element_bytes

    def bytes(self, batch: Batch) -> Batch:
        """State of ``batch`` sequences: it does not grow with tokens."""
        return batch * self.bytes_per_sequence


def state_layers(arch: Architecture, element_bytes: int) -> list[StateLayers]:
    """Per-sequence state of every recurrent layer kind of ``arch``, in ``element_bytes`` per element (the
    activation dtype), unless the config names the state's own dtype (Nemotron-H ``mamba_ssm_cache_dtype``, Qwen3.5
    ``mamba_ssm_dtype``).

    The conv keeps the last ``conv_kernel − 1`` inputs (vLLM's mamba conv cache; transformers' cache keeps
    ``conv_kernel`` columns, one more). Mamba-2 SSM state: heads × head_dim × state_size (the Mamba-2 paper's
    H × P × N); gated DeltaNet: v heads × head_k_dim × head_v_dim (one d_k × d_v matrix per head). A
    cross-attention layer (mllama) keeps K and V of the encoder's tokens: tokens × KV heads × (d_k + d_v), computed
    once from the image and fixed whatever the text length (held in the activation dtype, as transformers' cache
    holds the projected states).
    """
    out: list[StateLayers] = []
    m, g = arch.mamba, arch.linear_attention
    if m is not None and arch.mamba_layers:
        out.append(StateLayers("mamba2", arch.mamba_layers, (m.conv_kernel - 1) * m.conv_dim,
                               m.num_heads * m.head_dim * m.state_size, m.state_dtype_bytes or element_bytes))
    if g is not None and arch.mixer_count("gated_deltanet"):
        out.append(StateLayers("gated_deltanet", arch.mixer_count("gated_deltanet"), (g.conv_kernel - 1) * g.conv_dim,
                               g.num_v_heads * g.head_k_dim * g.head_v_dim, g.state_dtype_bytes or element_bytes))
    cross, a = arch.cross_attention, arch.attention
    if cross is not None and arch.mixer_count("cross_attention"):
        out.append(StateLayers("cross_attention", arch.mixer_count("cross_attention"), 0,
                               cross.tokens * a.num_kv_heads * (a.head_dim + a.v_head_dim), element_bytes))
    return out


def state_bytes(arch: Architecture, batch: Batch, element_bytes: int) -> Batch:
    """Σ over recurrent layer kinds of their per-sequence state × batch (0 for a pure transformer)."""
    total: Batch = batch * 0
    for group in state_layers(arch, element_bytes):
        total = total + group.bytes(batch)
    return total
