"""Activation memory of training, counted from the tensors each layer saves for its backward pass.

Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", §4, Table 2) count, for
a GPT-3 layer in 16 bit (LayerNorm, GeLU MLP of 4h, dropout), sbh(34 + 5as/h) bytes; tensor parallelism divides
the parts inside the attention and MLP blocks by t, sequence parallelism the rest; selective recomputation drops
the attention core (5as/h); full recomputation keeps only the layer input (2sbh). The constant 34 is a sum of
saved tensors, so it is rebuilt here tensor by tensor under a `Convention`: ``megatron`` reproduces Table 2
exactly (tests/training/test_training_activations.py), ``hf`` follows what PyTorch autograd saves for a Hugging Face
transformers layer — RMSNorm upcast to fp32, one autocast copy per linear that casts a non-16-bit input, SwiGLU
intermediates, GQA widths, SDPA/flash kernels that keep q, k, v, the output and an fp32 log-sum-exp (no s² term),
no dropout. The ``hf`` count reproduces the H200 reference training step (lab/accuracy/training_points.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from estimator.catalog.architecture import Architecture
from estimator.training.workload import AttentionImpl, LoraTarget

Sharding = Literal["tp", "sequence"]


@dataclass(frozen=True)
class SavedTensor:
    """A tensor kept for backward: bytes per token of one sequence in one (unsplit) layer.

    ``sharding``: ``tp`` inside the tensor-parallel attention/MLP regions (÷ t); ``sequence`` in the replicated
    regions (÷ t only with sequence parallelism). ``attention_core``: dropped by selective recomputation.
    ``statistic``: per-token scalars (norm statistics, log-sum-exp) that Korthikanti et al. leave out.
    """

    name: str
    bytes_per_token: Fraction
    sharding: Sharding
    attention_core: bool = False
    statistic: bool = False


@dataclass(frozen=True)
class Convention:
    """How a framework stores a layer's activations.

    ``residual_bytes``: dtype of the residual stream and norm outputs (fp32 under PyTorch AMP, whose embedding
    and residual adds stay fp32). ``compute_bytes``: dtype of matmul inputs/outputs. ``norm``: ``rms_fp32``
    (transformers' RMSNorm: fp32 copy of the input + normalized output + fp32 rstd) or ``input`` (LayerNorm:
    its input + mean and rstd). ``softmax_fp32``: eager attention's softmax in fp32 then cast (transformers).
    ``repeat_kv``: eager attention expands K/V to every query head (transformers' ``repeat_kv``).
    ``norm_scale_fp32``: the RMSNorm scales by its weight in fp32 before casting (Gemma, OLMo 2), so the normalized
    input it keeps for the weight's gradient is fp32.
    """

    name: Literal["hf", "megatron"]
    residual_bytes: int
    compute_bytes: int
    norm: Literal["rms_fp32", "input"]
    dropout: bool
    softmax_fp32: bool
    repeat_kv: bool
    norm_scale_fp32: bool = False


def hf_convention(arch: Architecture, *, residual_bytes: int, compute_bytes: int) -> Convention:
    """Hugging Face transformers under PyTorch: RMSNorm models upcast to fp32, LayerNorm models save the input.
    Dropout is off (modern configs set it to 0; fine-tuning recipes disable it)."""
    return Convention("hf", residual_bytes, compute_bytes, "rms_fp32" if arch.norm == "rms" else "input",
                      dropout=False, softmax_fp32=True, repeat_kv=True, norm_scale_fp32=arch.norm_scale_fp32)


MEGATRON_GPT3 = Convention("megatron", 2, 2, "input", dropout=True, softmax_fp32=False, repeat_kv=False)


@dataclass(frozen=True)
class Trainable:
    """What needs weight gradients: the linears whose inputs must be saved (all of them in a full fine-tune, the
    LoRA-adapted ones otherwise), the norm weights, and the LM head / embedding."""

    linears: frozenset[LoraTarget]
    norms: bool
    head: bool


def _mlp_width(arch: Architecture) -> int:
    """Intermediate width one token passes through: top-k experts plus shared experts in MoE layers."""
    if arch.moe is not None and arch.num_moe_layers:
        moe = arch.moe
        return moe.experts_per_token * moe.expert_intermediate_size + moe.shared_intermediate_size
    return arch.mlp.intermediate_size


def _norm(prefix: str, h: int, conv: Convention, trainable: Trainable, *, input_bytes: int | None = None,
          sharding: Sharding = "sequence", rows: int = 1) -> list[SavedTensor]:
    """What one norm over ``h`` elements a token saves. ``input_bytes``: its input's dtype (the residual stream's
    by default; a norm after a block or on q/k normalizes a projection's output, in the compute dtype); ``rows``:
    how many normalizations a token makes (one per head for per-head q/k norms), each with its own statistic."""
    r = conv.residual_bytes if input_bytes is None else input_bytes
    if conv.norm == "rms_fp32":
        # transformers' RMSNorm upcasts its input (saved, 4 bytes); the normalized input goes back to the input's
        # dtype before the weight multiplies it (Llama), or stays fp32 where the weight scales it in fp32 (Gemma)
        out = [SavedTensor(f"{prefix}.input_fp32", Fraction(4 * h), sharding)]
        if trainable.norms:  # weight × normalized saves the normalized input only to grad the weight
            scaled = 4 if conv.norm_scale_fp32 else r
            out.append(SavedTensor(f"{prefix}.normalized", Fraction(scaled * h), sharding))
        return [*out, SavedTensor(f"{prefix}.rstd_fp32", Fraction(4 * rows), sharding, statistic=True)]
    return [SavedTensor(f"{prefix}.input", Fraction(r * h), sharding),
            SavedTensor(f"{prefix}.mean_rstd_fp32", Fraction(8 * rows), sharding, statistic=True)]


def _post_norm(prefix: str, h: int, arch: Architecture, conv: Convention, trainable: Trainable
               ) -> list[SavedTensor]:
    """A norm after a block, before the residual add (Gemma 2 and 3, GLM-4: four norms a layer): it normalizes the
    block's output, in the compute dtype, which nothing else keeps."""
    if arch.norms_per_layer < 4 or arch.block_norms:
        return []
    return _norm(prefix, h, conv, trainable, input_bytes=conv.compute_bytes)


def _qk_norms(arch: Architecture, conv: Convention, trainable: Trainable) -> list[SavedTensor]:
    """Norms on the query and key projections (Qwen 3, Gemma 3, OLMo 2): each saves what a norm saves over the
    projection's width — per head, or over the whole projection (``qk_norm_full_width``)."""
    att = arch.attention
    if not att.qk_norm or att.latent is not None:
        return []
    out: list[SavedTensor] = []
    for name, heads in (("q_norm", att.num_heads), ("k_norm", att.num_kv_heads)):
        out += _norm(name, heads * att.head_dim, conv, trainable, input_bytes=conv.compute_bytes, sharding="tp",
                     rows=1 if att.qk_norm_full_width else heads)
    return out


def _linear_inputs(name: str, h: int, consumers: int, conv: Convention) -> list[SavedTensor]:
    """A norm output feeding ``consumers`` trainable linears: one shared tensor, or one autocast copy each when
    the norm output is wider than the compute dtype (autocast caches only leaf weights, not activations)."""
    if consumers == 0:
        return []
    copies = consumers if conv.residual_bytes != conv.compute_bytes else 1
    return [SavedTensor(name, Fraction(copies * conv.compute_bytes * h), "sequence")]


def layer_saved_tensors(arch: Architecture, conv: Convention, trainable: Trainable, *, seq_len: int,
                        attention: AttentionImpl) -> list[SavedTensor]:
    """Every tensor one transformer layer keeps for backward, per token (see module docstring)."""
    att, h, c = arch.attention, arch.hidden_size, conv.compute_bytes
    a = att.num_heads
    q_w, k_w, v_w, o_w = a * att.head_dim, att.num_kv_heads * att.head_dim, att.num_kv_heads * att.v_head_dim, \
        a * att.v_head_dim
    lin = trainable.linears
    out = _norm("attn_norm", h, conv, trainable)
    out += _linear_inputs("qkv_input", h, len(lin & {"q", "k", "v"}), conv)
    out += _qk_norms(arch, conv, trainable)
    if attention == "eager":
        k_saved, v_saved = (a * att.head_dim, a * att.v_head_dim) if conv.repeat_kv else (k_w, v_w)
        scores = a * seq_len  # per query token: one row of a × s probabilities
        out += [SavedTensor("q", Fraction(c * q_w), "tp"), SavedTensor("k", Fraction(c * k_saved), "tp"),
                SavedTensor("softmax_out", Fraction((4 if conv.softmax_fp32 else c) * scores), "tp",
                            attention_core=True)]
        if conv.softmax_fp32:
            out.append(SavedTensor("probs_16bit", Fraction(c * scores), "tp", attention_core=True))
        if conv.dropout:
            out += [SavedTensor("attn_dropout_mask", Fraction(scores), "tp", attention_core=True),
                    SavedTensor("attn_dropout_out", Fraction(c * scores), "tp", attention_core=True)]
        out.append(SavedTensor("v", Fraction(c * v_saved), "tp"))
        if "o" in lin:
            out.append(SavedTensor("o_proj_input", Fraction(c * o_w), "tp"))
    else:  # SDPA flash/memory-efficient kernels and FlashAttention: q, k, v, output, fp32 log-sum-exp per head
        out += [SavedTensor("q", Fraction(c * q_w), "tp"), SavedTensor("k", Fraction(c * k_w), "tp"),
                SavedTensor("v", Fraction(c * v_w), "tp"), SavedTensor("attn_out", Fraction(c * o_w), "tp"),
                SavedTensor("logsumexp_fp32", Fraction(4 * a), "tp", statistic=True)]
    out += _post_norm("post_attn_norm", h, arch, conv, trainable)
    if conv.dropout:
        out.append(SavedTensor("attn_residual_dropout_mask", Fraction(h), "sequence"))

    out += _norm("mlp_norm", h, conv, trainable)
    ffn = _mlp_width(arch)
    if arch.mlp.gated:
        out += _linear_inputs("gate_up_input", h, len(lin & {"gate", "up"}), conv)
        out += [SavedTensor("gate_out", Fraction(c * ffn), "tp"), SavedTensor("act_out", Fraction(c * ffn), "tp"),
                SavedTensor("up_out", Fraction(c * ffn), "tp")]
    else:
        out += _linear_inputs("up_input", h, len(lin & {"up"}), conv)
        out.append(SavedTensor("act_input", Fraction(c * ffn), "tp"))
    if "down" in lin:
        out.append(SavedTensor("down_input", Fraction(c * ffn), "tp"))
    out += _post_norm("post_mlp_norm", h, arch, conv, trainable)
    if conv.dropout:
        out.append(SavedTensor("mlp_residual_dropout_mask", Fraction(h), "sequence"))
    return out


def per_token_bytes(tensors: Iterable[SavedTensor], *, tp: int = 1, sequence_parallel: bool = False,
                    selective: bool = False, statistics: bool = True) -> Fraction:
    """Σ bytes per token of ``tensors`` on one of ``tp`` ranks (Korthikanti et al. 2022, Table 2 rules)."""
    total = Fraction(0)
    for t in tensors:
        if (selective and t.attention_core) or (t.statistic and not statistics):
            continue
        total += t.bytes_per_token / (tp if t.sharding == "tp" or sequence_parallel else 1)
    return total


def layer_input_bytes_per_token(arch: Architecture, conv: Convention, *, tp: int = 1,
                                sequence_parallel: bool = False) -> Fraction:
    """Full recomputation keeps only each layer's input: the residual stream, h elements per token (2sbh in 16
    bit, Korthikanti Table 2; fp32 under PyTorch AMP)."""
    return Fraction(conv.residual_bytes * arch.hidden_size, tp if sequence_parallel else 1)


@dataclass(frozen=True)
class OutputStage:
    """Model-level saved tensors outside the layers, per token: final norm, head input and the loss's saved
    log-softmax; ``per_position``: those the batch shares, one row per position (transformers' rotary cos and sin,
    built from position ids ``arange(s)[None]``: traced, tests/data/measured/peak-traces/cpu-train-live-sets.jsonl);
    ``loss_backward_bytes``: the two fp32 vocab-wide gradients that exist together at the start of backward
    (nll_loss's gradient and log_softmax's)."""

    saved: list[SavedTensor]
    loss_backward_bytes: Fraction
    per_position: tuple[SavedTensor, ...] = ()
    # the logits in the compute dtype and their fp32 copy, beside the saved log-softmax while the loss runs (no copy
    # where the logits are fp32 already): what the forward's end holds in place of the loss gradients
    loss_forward_bytes: Fraction = Fraction(0)

    def bytes(self, tokens: int, positions: int, *, tp: int = 1, sequence_parallel: bool = False) -> int:
        """What the stage saves for a micro-batch of ``tokens`` tokens over ``positions`` positions."""
        return (bytes_for(per_token_bytes(self.saved, tp=tp, sequence_parallel=sequence_parallel), tokens)
                + bytes_for(per_token_bytes(self.per_position, tp=tp, sequence_parallel=sequence_parallel), positions))


def output_stage(arch: Architecture, conv: Convention, trainable: Trainable) -> OutputStage:
    """Hugging Face: ``ForCausalLMLoss`` upcasts the logits to fp32 and calls cross_entropy, whose log_softmax
    output (4·V bytes per token) is saved; the 16-bit logits and the fp32 copy are freed once the loss is computed
    (the caller keeps only the loss). At backward start the nll_loss gradient and the log_softmax gradient (4·V
    each) join it: 12·V per token — measured on the H200 reference step to within 64 KiB. Final-logit soft-capping
    saves its tanh output (V per token in the compute dtype).
    Megatron (Korthikanti §4.3): final LayerNorm input, head input and fp32 logits (4sbv), gradient in place."""
    h, v = arch.hidden_size, arch.vocab_size if arch.lm_head else 0
    out: list[SavedTensor] = []
    shared: tuple[SavedTensor, ...] = ()
    if conv.name == "hf" and arch.position_embeddings == 0 and arch.causal:
        shared = (SavedTensor("rotary_cos_sin", Fraction(2 * arch.attention.head_dim * conv.residual_bytes),
                              "sequence"),)
    if arch.final_norm:
        out += _norm("final_norm", h, conv, trainable)
    if trainable.head:
        out += _linear_inputs("lm_head_input", h, 1, conv)
    if conv.name == "megatron":
        return OutputStage([*out, SavedTensor("logits_fp32", Fraction(4 * v), "tp")], Fraction(0))  # no rotary
    out.append(SavedTensor("log_softmax_fp32", Fraction(4 * v), "tp"))
    if arch.final_logit_softcapping:  # cap × tanh(logits ÷ cap) (Gemma 2): tanh's output is saved for backward
        out.append(SavedTensor("softcap_tanh", Fraction(conv.compute_bytes * v), "tp"))
    if trainable.head:  # the embedding's backward keeps the int64 token ids
        out.append(SavedTensor("input_ids_int64", Fraction(8), "sequence"))
    logits = conv.compute_bytes * v + (4 * v if conv.compute_bytes != 4 else 0)
    return OutputStage(out, Fraction(8 * v), shared, Fraction(logits))


def bytes_for(per_token: Fraction, tokens: int) -> int:
    """Round up once, at the end."""
    return math.ceil(per_token * tokens)
