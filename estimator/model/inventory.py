"""The tensors of a model: every weight matrix, embedding, norm and bias, grouped by shape and role.

Parameter counts, weight bytes under a quantization format, and the bytes a decode step reads all come from this
one list, so they cannot disagree. Counts follow the module layout of Hugging Face transformers for each family
(tests compare them with transformers' own count on the ``meta`` device).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cache

from estimator.catalog.architecture import Architecture, Attention, Mlp
from estimator.model.state import indexer_tensors, mixer_tensors


class Role(str, Enum):
    """What a tensor is for: decides whether a format quantizes it and whether a decode step reads it."""

    EMBEDDING = "embedding"  # token embedding table: a decode step gathers rows, it does not read the table
    POSITION = "position_embedding"
    LM_HEAD = "lm_head"
    ATTENTION = "attention"
    MLP = "mlp"
    EXPERT = "expert"  # routed experts: a decode step reads only those the batch routes to
    SHARED_EXPERT = "shared_expert"
    ROUTER = "router"
    NORM = "norm"
    BIAS = "bias"
    POOLER = "pooler"
    SSM = "ssm"  # recurrent mixers' conv kernels, A_log, D, dt_bias: small, kept 16-bit like norms
    # a multimodal model's encoders and the projector into the text model: they run on images or audio in the
    # prefill, never in a decode step, and the text model's formats leave them in their own 16-bit dtype
    VISION_TOWER = "vision_tower"
    AUDIO_TOWER = "audio_tower"
    PROJECTOR = "projector"
    OTHER = "other"  # a checkpoint tensor whose name places it in no role above (e.g. GGUF rope_freqs)

    @property
    def is_tower(self) -> bool:
        return self in (Role.VISION_TOWER, Role.AUDIO_TOWER, Role.PROJECTOR)

    @property
    def is_linear(self) -> bool:
        """Weight matrices of linear layers: what weight-only quantization formats (GPTQ, AWQ, GGUF) pack."""
        return self in _LINEAR


_LINEAR = {Role.ATTENTION, Role.MLP, Role.EXPERT, Role.SHARED_EXPERT}


@dataclass(frozen=True)
class TensorGroup:
    """``count`` tensors of ``numel`` elements each, e.g. the q_proj weight of every layer."""

    name: str
    role: Role
    numel: int
    count: int
    in_features: int = 0  # a linear layer's weight matrix: its input width (numel ÷ this is the output's); 0: none

    @property
    def total(self) -> int:
        return self.numel * self.count


def _attention_tensors(attn: Attention, hidden: int, layers: int, prefix: str) -> list[TensorGroup]:
    out: list[TensorGroup] = []
    if layers == 0:
        return out
    q_width = attn.num_heads * attn.head_dim
    o_width = attn.num_heads * attn.v_head_dim
    latent = attn.latent
    if latent is None:
        kv_width_k = attn.num_kv_heads * attn.head_dim
        kv_width_v = attn.num_kv_heads * attn.v_head_dim
        gate = 2 if attn.output_gate else 1  # Qwen3-Next: q_proj also yields the output gate
        out += [
            TensorGroup(f"{prefix}.q_proj.weight", Role.ATTENTION, hidden * q_width * gate, layers, hidden),
            TensorGroup(f"{prefix}.k_proj.weight", Role.ATTENTION, hidden * kv_width_k, layers, hidden),
            TensorGroup(f"{prefix}.v_proj.weight", Role.ATTENTION, hidden * kv_width_v, layers, hidden),
        ]
        if attn.q_bias:
            out.append(TensorGroup(f"{prefix}.q_proj.bias", Role.BIAS, q_width, layers))
        if attn.kv_bias:
            out.append(TensorGroup(f"{prefix}.k_proj.bias", Role.BIAS, kv_width_k, layers))
            out.append(TensorGroup(f"{prefix}.v_proj.bias", Role.BIAS, kv_width_v, layers))
    else:
        if latent.q_lora_rank is None:
            out.append(TensorGroup(f"{prefix}.q_proj.weight", Role.ATTENTION, hidden * q_width, layers, hidden))
        else:
            out += [
                TensorGroup(f"{prefix}.q_a_proj.weight", Role.ATTENTION, hidden * latent.q_lora_rank, layers, hidden),
                TensorGroup(f"{prefix}.q_a_layernorm.weight", Role.NORM, latent.q_lora_rank, layers),
                TensorGroup(f"{prefix}.q_b_proj.weight", Role.ATTENTION, latent.q_lora_rank * q_width, layers,
                            latent.q_lora_rank),
            ]
        kv_a = latent.kv_lora_rank + latent.qk_rope_head_dim
        kv_b = attn.num_heads * (latent.qk_nope_head_dim + latent.v_head_dim)
        out += [
            TensorGroup(f"{prefix}.kv_a_proj_with_mqa.weight", Role.ATTENTION, hidden * kv_a, layers, hidden),
            TensorGroup(f"{prefix}.kv_a_layernorm.weight", Role.NORM, latent.kv_lora_rank, layers),
            TensorGroup(f"{prefix}.kv_b_proj.weight", Role.ATTENTION, latent.kv_lora_rank * kv_b, layers,
                        latent.kv_lora_rank),
        ]
    out.append(TensorGroup(f"{prefix}.o_proj.weight", Role.ATTENTION, o_width * hidden, layers, o_width))
    if attn.o_bias:
        out.append(TensorGroup(f"{prefix}.o_proj.bias", Role.BIAS, hidden, layers))
    if attn.qk_norm:
        full = attn.qk_norm_full_width
        out.append(TensorGroup(f"{prefix}.q_norm.weight", Role.NORM, q_width if full else attn.head_dim, layers))
        k_width = attn.num_kv_heads * attn.head_dim if full else attn.head_dim
        out.append(TensorGroup(f"{prefix}.k_norm.weight", Role.NORM, k_width, layers))
    if attn.sinks:
        out.append(TensorGroup(f"{prefix}.sinks", Role.NORM, attn.num_heads, layers))
    return out


def _mlp_tensors(mlp: Mlp, hidden: int, count: int, prefix: str, role: Role) -> list[TensorGroup]:
    if count == 0:
        return []
    width = mlp.intermediate_size
    names = ("gate_proj", "up_proj") if mlp.gated else ("up_proj",)
    out = [TensorGroup(f"{prefix}.{n}.weight", role, hidden * width, count, hidden) for n in names]
    out.append(TensorGroup(f"{prefix}.down_proj.weight", role, width * hidden, count, width))
    if mlp.bias:
        out += [TensorGroup(f"{prefix}.{n}.bias", Role.BIAS, width, count) for n in names]
        out.append(TensorGroup(f"{prefix}.down_proj.bias", Role.BIAS, hidden, count))
    return out


def _norm_numel(arch: Architecture) -> int:
    return arch.hidden_size * (2 if arch.norm == "layer" else 1)  # LayerNorm: weight and bias


def _moe_tensors(arch: Architecture) -> list[TensorGroup]:
    """The router, routed experts and shared experts of every MoE layer."""
    moe, h, moe_layers = arch.moe, arch.hidden_size, arch.num_moe_layers
    out: list[TensorGroup] = []
    if moe is None or not moe_layers:
        return out
    expert = Mlp(intermediate_size=moe.expert_intermediate_size, gated=arch.mlp.gated)
    out.append(TensorGroup("layers.*.mlp.gate.weight", Role.ROUTER, h * moe.num_experts, moe_layers, h))
    if moe.router_bias:
        out.append(TensorGroup("layers.*.mlp.gate.bias", Role.BIAS, moe.num_experts, moe_layers))
    expert = expert.model_copy(update={"bias": moe.expert_bias})
    out += _mlp_tensors(expert, moe.expert_width_in(h), moe_layers * moe.num_experts, "layers.*.mlp.experts.*",
                        Role.EXPERT)
    if moe.latent_size:  # NemotronHMoE: fc1_latent_proj and fc2_latent_proj around the routed experts, every token
        latent = moe.latent_size
        out.append(TensorGroup("layers.*.mlp.fc1_latent_proj.weight", Role.MLP, h * latent, moe_layers, h))
        out.append(TensorGroup("layers.*.mlp.fc2_latent_proj.weight", Role.MLP, latent * h, moe_layers, latent))
        if arch.mlp.bias:
            out.append(TensorGroup("layers.*.mlp.latent_proj.bias", Role.BIAS, latent + h, moe_layers))
    if moe.shared_intermediate_size:
        shared = Mlp(intermediate_size=moe.shared_intermediate_size, gated=arch.mlp.gated)
        out += _mlp_tensors(shared, h, moe_layers, "layers.*.mlp.shared_experts", Role.SHARED_EXPERT)
    if moe.shared_expert_gate:
        out.append(TensorGroup("layers.*.mlp.shared_expert_gate.weight", Role.ROUTER, h, moe_layers))
    return out


@cache
def tensor_inventory(arch: Architecture) -> tuple[TensorGroup, ...]:
    """Every parameter tensor of ``arch``, grouped; tied embeddings appear once. A model read from the modules
    transformers built (`Architecture.read_tensors`) has exactly those tensors."""
    if arch.read_tensors:
        return tuple(TensorGroup(name, Role(role), numel, count, width)
                     for name, role, numel, count, width in arch.read_tensors)
    h = arch.hidden_size
    out = [TensorGroup("embed_tokens.weight", Role.EMBEDDING, (arch.vocab_size + arch.extra_embedding_rows) * h, 1)]
    if arch.position_embeddings:
        out.append(TensorGroup("embed_positions.weight", Role.POSITION, arch.position_embeddings * h, 1))
    if arch.token_type_embeddings:
        out.append(TensorGroup("token_type_embeddings.weight", Role.POSITION, arch.token_type_embeddings * h, 1))
    if arch.embedding_norm:
        out.append(TensorGroup("embeddings.norm", Role.NORM, _norm_numel(arch), 1))

    out += _attention_tensors(arch.attention, h, arch.mixer_count("attention"), "layers.*.self_attn")
    out += [TensorGroup(n, Role(r), numel, c)
            for n, r, numel, c in indexer_tensors(arch.attention, h, arch.num_indexer_layers, "layers.*.self_attn")]
    if arch.mixer_count("linear"):  # DeciLM's replace_with_linear: a bias-free hidden × hidden projection
        out.append(TensorGroup("layers.*.self_attn.linear_attn.weight", Role.ATTENTION, h * h,
                               arch.mixer_count("linear"), h))
    cross = arch.mixer_count("cross_attention")
    if cross:  # mllama MllamaTextCrossAttention: the text attention's projections, per-head q/k norms, two gates
        out += _attention_tensors(arch.attention.model_copy(update={"qk_norm": True, "qk_norm_full_width": False}),
                                  h, cross, "layers.*.cross_attn")
        out.append(TensorGroup("layers.*.cross_attn_attn_gate+mlp_gate", Role.NORM, 2, cross))
    out += [TensorGroup(n, Role(r), numel, c) for n, r, numel, c in mixer_tensors(arch)]
    if arch.norm_count:
        out.append(TensorGroup("layers.*.norms", Role.NORM, _norm_numel(arch), arch.norm_count))

    for width, count in arch.dense_mlp_widths().items():
        prefix = f"layers.*.mlp[{width}]" if arch.layer_mlp_widths else "layers.*.mlp"
        out += _mlp_tensors(arch.mlp.model_copy(update={"intermediate_size": width}), h, count, prefix, Role.MLP)
    out += _moe_tensors(arch)

    if arch.final_norm:
        out.append(TensorGroup("norm", Role.NORM, _norm_numel(arch), 1))
    if arch.pooler:
        out.append(TensorGroup("pooler.dense.weight", Role.POOLER, h * h, 1, h))
        out.append(TensorGroup("pooler.dense.bias", Role.BIAS, h, 1))
    if arch.lm_head and not arch.tie_word_embeddings:
        out.append(TensorGroup("lm_head.weight", Role.LM_HEAD, h * arch.vocab_size, 1))
    if arch.lm_head and arch.lm_head_bias:
        out.append(TensorGroup("lm_head.bias", Role.BIAS, arch.vocab_size, 1))
    out += [TensorGroup(name, Role(role), numel, count) for name, role, numel, count in arch.towers]
    return tuple(out)


def param_count(arch: Architecture) -> int:
    """Total parameters, tied embeddings counted once (what ``sum(p.numel() for p in model.parameters())`` gives)."""
    return sum(t.total for t in tensor_inventory(arch))


def active_param_count(arch: Architecture) -> int:
    """Parameters one text token uses: everything except the routed experts it is not sent to and a multimodal
    model's towers (they run on images and audio)."""
    total = param_count(arch) - sum(t.total for t in tensor_inventory(arch) if t.role.is_tower)
    if arch.moe is None:
        return total
    expert_params = sum(t.total for t in tensor_inventory(arch) if t.role is Role.EXPERT)
    return total - expert_params + expert_params * arch.moe.experts_per_token // arch.moe.num_experts


def lm_head_numel(arch: Architecture) -> int:
    """Elements of the output projection, which is the embedding matrix itself when tied."""
    return arch.hidden_size * arch.vocab_size if arch.lm_head else 0
