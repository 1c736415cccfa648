"""Recurrent and indexed mixers: their tensors, and the memory they hold per sequence beside the KV cache.

A Mamba-2 or Mamba-1 layer and a gated-DeltaNet (linear-attention) layer keep a fixed state per sequence, whatever
the context: the last ``conv_kernel − 1`` inputs of their causal convolution and a recurrent matrix (the SSM state,
or the delta-rule state); an LFM2 short-convolution layer keeps the conv window alone. The KV cache grows with
tokens; this state does not. A Falcon-H1 layer runs attention and a Mamba-2 mixer side by side, so it holds both.
Tensor layouts follow transformers' ``NemotronHMamba2Mixer``, ``FalconH1Mixer``, ``JambaMambaMixer``,
``Lfm2ShortConv`` and ``Qwen3NextGatedDeltaNet`` (tests compare the counts with transformers on the meta device).
DeepSeek-V3.2's indexer adds tensors to attention and one cached key per token. A cross-attention layer (mllama)
holds a fixed per-sequence state too: K and V of the image tokens it attends to.

Every state term is integer arithmetic on ``batch``, so it works the same for an int and a numpy int64 array.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from estimator.catalog.architecture import (
    Architecture,
    Attention,
    GatedDeltaNet,
    KimiDeltaAttention,
    Mamba1,
    Mamba2,
    ShortConv,
)

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


def _mamba1_tensors(m: Mamba1, hidden: int, layers: int) -> list[TensorRow]:
    """JambaMambaMixer: in_proj (x and gate z), a depthwise conv, x_proj (dt, B, C), dt_proj with its bias,
    A_log (inner × state) and D, out_proj, and with ``dt_norms`` the RMSNorms on dt, B and C."""
    prefix = "layers.*.mamba"
    out = [
        _group(f"{prefix}.in_proj.weight", "attention", hidden * 2 * m.inner, layers),
        _group(f"{prefix}.conv1d.weight", "ssm", m.inner * m.conv_kernel, layers),
        _group(f"{prefix}.x_proj.weight", "attention", m.inner * (m.dt_rank + 2 * m.state_size), layers),
        _group(f"{prefix}.dt_proj.weight", "attention", m.dt_rank * m.inner, layers),
        _group(f"{prefix}.dt_proj.bias", "bias", m.inner, layers),
        _group(f"{prefix}.A_log+D", "ssm", m.inner * m.state_size + m.inner, layers),
        _group(f"{prefix}.out_proj.weight", "attention", m.inner * hidden, layers),
    ]
    if m.conv_bias:
        out.append(_group(f"{prefix}.conv1d.bias", "bias", m.inner, layers))
    if m.proj_bias:
        out.append(_group(f"{prefix}.in_proj.bias+out_proj.bias", "bias", 2 * m.inner + hidden, layers))
    if m.dt_norms:
        out.append(_group(f"{prefix}.dt+b+c_layernorm.weight", "norm", m.dt_rank + 2 * m.state_size, layers))
    return out


def _short_conv_tensors(c: ShortConv, hidden: int, layers: int) -> list[TensorRow]:
    """Lfm2ShortConv: in_proj (hidden → B, C, x), a depthwise conv over hidden channels, out_proj."""
    prefix = "layers.*.conv"
    out = [
        _group(f"{prefix}.in_proj.weight", "attention", hidden * 3 * hidden, layers),
        _group(f"{prefix}.conv.weight", "ssm", hidden * c.conv_kernel, layers),
        _group(f"{prefix}.out_proj.weight", "attention", hidden * hidden, layers),
    ]
    if c.bias:
        out.append(_group(f"{prefix}.in_proj+conv+out_proj.bias", "bias", 3 * hidden + hidden + hidden, layers))
    return out


def _kda_tensors(k: KimiDeltaAttention, hidden: int, layers: int) -> list[TensorRow]:
    """KimiLinearDeltaAttention: q, k, v projections, one bias-free depthwise conv over them, the forget gate (f_a,
    f_b low-rank, dt_bias per channel, A_log per head), b_proj (β per head), the output gate (g_a, g_b low-rank), the
    gated RMSNorm over one head and o_proj."""
    prefix, qkv, d = "layers.*.self_attn", k.qkv_dim, k.head_dim
    return [
        _group(f"{prefix}.q_proj+k_proj+v_proj.weight", "attention", hidden * 3 * qkv, layers),
        _group(f"{prefix}.conv1d.weight", "ssm", 3 * qkv * k.conv_kernel, layers),
        _group(f"{prefix}.f_a_proj+g_a_proj.weight", "attention", 2 * hidden * d, layers),
        _group(f"{prefix}.f_b_proj+g_b_proj.weight", "attention", 2 * d * qkv, layers),
        _group(f"{prefix}.b_proj.weight", "attention", hidden * k.num_heads, layers),
        _group(f"{prefix}.dt_bias+A_log", "ssm", qkv + k.num_heads, layers),
        _group(f"{prefix}.o_norm.weight", "norm", d, layers),
        _group(f"{prefix}.o_proj.weight", "attention", qkv * hidden, layers),
    ]


def mixer_tensors(arch: Architecture) -> list[TensorRow]:
    """Tensors of the recurrent and convolutional mixers of ``arch`` (none for a pure transformer)."""
    out: list[TensorRow] = []
    if arch.mamba1 is not None and arch.mixer_count("mamba1"):
        out += _mamba1_tensors(arch.mamba1, arch.hidden_size, arch.mixer_count("mamba1"))
    if arch.kda is not None and arch.mixer_count("kda"):
        out += _kda_tensors(arch.kda, arch.hidden_size, arch.mixer_count("kda"))
    if arch.short_conv is not None and arch.mixer_count("short_conv"):
        out += _short_conv_tensors(arch.short_conv, arch.hidden_size, arch.mixer_count("short_conv"))
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

    kind: Literal["mamba2", "gated_deltanet", "mamba1", "short_conv", "kda", "cross_attention"]
    layers: int
    conv_elements: int  # (conv_kernel − 1) × conv channels
    # Mamba-2 SSM: heads × head_dim × state; Mamba-1: inner × state; DeltaNet: v heads × k dim × v dim; cross K and V
    recurrent_elements: int
    element_bytes: int
    recurrent_bytes: int | None = None  # the recurrent state's own element size where it differs (KDA: fp32)

    @property
    def bytes_per_sequence(self) -> int:
        recurrent = self.recurrent_bytes or self.element_bytes
        return self.layers * (self.conv_elements * self.element_bytes + self.recurrent_elements * recurrent)

    def bytes(self, batch: Batch) -> Batch:
        """State of ``batch`` sequences: it does not grow with tokens."""
        return batch * self.bytes_per_sequence


def state_layers(arch: Architecture, element_bytes: int) -> list[StateLayers]:
    """Per-sequence state of every recurrent layer kind of ``arch``, in ``element_bytes`` per element (the
    activation dtype), unless the config names the state's own dtype (Nemotron-H ``mamba_ssm_cache_dtype``, Qwen3.5
    ``mamba_ssm_dtype``).

    The conv keeps the last ``conv_kernel − 1`` inputs (vLLM's mamba conv cache; transformers' cache keeps
    ``conv_kernel`` columns, one more). Mamba-2 SSM state: heads × head_dim × state_size (the Mamba-2 paper's
    H × P × N); Mamba-1: inner × state_size (JambaMambaMixer's ssm_state, batch × inner × d_state), its conv over
    the inner channels; LFM2's short convolution: its conv window alone, (conv_kernel − 1) × hidden
    (Lfm2ShortConv's conv_state, batch × hidden × L_cache in transformers); Kimi Delta Attention: (conv_kernel − 1)
    × 3 × heads × head_dim of conv in the activation dtype and heads × head_dim² of state in fp32; gated DeltaNet:
    v heads × head_k_dim × head_v_dim (one d_k × d_v matrix per head). A
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
    m1, sc, kda = arch.mamba1, arch.short_conv, arch.kda
    if kda is not None and arch.mixer_count("kda"):  # the conv in the activation dtype, the matrix in fp32
        out.append(StateLayers("kda", arch.mixer_count("kda"), (kda.conv_kernel - 1) * 3 * kda.qkv_dim,
                               kda.num_heads * kda.head_dim ** 2, element_bytes, recurrent_bytes=4))
    if m1 is not None and arch.mixer_count("mamba1"):
        out.append(StateLayers("mamba1", arch.mixer_count("mamba1"), (m1.conv_kernel - 1) * m1.inner,
                               m1.inner * m1.state_size, element_bytes))
    if sc is not None and arch.mixer_count("short_conv"):
        out.append(StateLayers("short_conv", arch.mixer_count("short_conv"), (sc.conv_kernel - 1) * arch.hidden_size,
                               0, element_bytes))
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
