"""Memory terms of an inference job, each a pure function returning bytes.

Every term that depends on batch or tokens also evaluates elementwise on numpy int64 arrays (a sweep grid): it uses
only integer arithmetic and the helpers of `estimator.model.elementwise`.

Sources: formulas.md (shared reference) for the formulas; the H200 measurements in
``tests/data/measured/reference/h200-measured.jsonl`` for the live-tensor accounting of the prefill peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from estimator.catalog.architecture import Architecture
from estimator.catalog.checkpoint_files import StoredWeights
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.specs import NumberFormat
from estimator.model.elementwise import any_true, maximum, minimum, round_half_even, where
from estimator.model.inventory import Role, TensorGroup, tensor_inventory

SIXTEEN_BIT = Fraction(16)


def tensor_bits(role: Role, fmt: NumberFormat) -> Fraction:
    """Storage bits per element of a tensor with ``role`` under ``fmt``.

    Formats with scope ``linear`` (GPTQ, AWQ, NF4, FP8, int8...) pack only linear weight matrices; embeddings, the
    LM head, norms and biases stay in 16 bit, as quantized checkpoints ship them. Scope ``experts`` (a gpt-oss
    checkpoint's MXFP4) packs the routed experts only. A format read from a checkpoint's headers
    (`stored_format`) gives each role the bits its files store.
    """
    if fmt.stored_roles:
        stored = next(((n, b) for r, n, b in fmt.stored_roles if r == role.value), None)
        return SIXTEEN_BIT if stored is None else Fraction(8 * stored[1], stored[0])
    if fmt.scope == "all" or (role is Role.EXPERT if fmt.scope == "experts" else role.is_linear):
        return Fraction(str(fmt.bits_per_weight))
    return SIXTEEN_BIT


def bytes_of(numel: int, bits: Fraction) -> int:
    """Bytes for ``numel`` elements of ``bits`` each: multiply bits first, divide by 8 last, round up (in integers:
    ceil(numel × p / q) for bits / 8 = p / q in lowest terms)."""
    per_element = bits / 8
    if per_element.denominator == 1:  # whole bytes: nothing to round (and no slow array division)
        return numel * per_element.numerator
    return -(-(numel * per_element.numerator) // per_element.denominator)


@dataclass(frozen=True)
class WeightShare:
    """Weights of one role under one format: what ``--explain`` and the report's breakdown show."""

    role: Role
    numel: int
    bits: Fraction

    @property
    def bytes(self) -> int:
        return bytes_of(self.numel, self.bits)


def weight_shares(arch: Architecture, fmt: NumberFormat) -> list[WeightShare]:
    """Weights grouped by role, each with the bits per element its format gives it; under a checkpoint's own
    format, the roles its files hold, so that their bytes sum to the files' tensor bytes exactly."""
    if fmt.stored_roles:
        return [WeightShare(Role(r), n, Fraction(8 * b, n)) for r, n, b in fmt.stored_roles]
    numel: dict[Role, int] = {}
    for group in tensor_inventory(arch):
        numel[group.role] = numel.get(group.role, 0) + group.total
    return [WeightShare(role, n, tensor_bits(role, fmt)) for role, n in numel.items()]


def weights_bytes(arch: Architecture, fmt: NumberFormat) -> int:
    """Σ over tensors of numel × bits / 8 (formulas.md, Weights)."""
    return sum(share.bytes for share in weight_shares(arch, fmt))


def generic_weights_bytes(params: int, fmt: NumberFormat) -> int:
    """A model known only by its parameter count: every parameter in ``fmt``."""
    return bytes_of(params, Fraction(str(fmt.bits_per_weight)))


def kv_elements_per_token(arch: Architecture, layer: int, *, decompressed_mla: bool) -> int:
    """Cached elements per token in one layer.

    Standard attention: K and V for every KV head, n_kv × (d_k + d_v). Multi-head latent attention in engines
    that cache the latent: kv_lora_rank + qk_rope_head_dim (DeepSeek-V3: 512 + 64 = 576); Hugging Face
    transformers' code caches decompressed K and V instead: n_heads × (d_qk + d_v).
    """
    attn = arch.attention
    if arch.kv_cache_kind == "none":
        return 0
    # DeepSeek-V3.2's indexer caches one key of index_head_dim per token beside the attention cache, in the layers
    # that run one (GLM-5.2: 21 of 78; the others reuse the previous indexer's top-k)
    indexer = attn.indexer.head_dim if attn.indexer is not None and arch.has_indexer(layer) else 0
    if attn.latent is not None and not decompressed_mla:
        return attn.latent.kv_lora_rank + attn.latent.qk_rope_head_dim + indexer
    return attn.num_kv_heads * (attn.head_dim + attn.v_head_dim) + indexer


@dataclass(frozen=True)
class KvLayers:
    """Layers that share one window: how many, the tokens each holds, and the bytes all of them hold."""

    window: int | None
    layers: int
    tokens: int
    bytes: int


def kv_cache_layers(arch: Architecture, tokens: int, batch: int, fmt: NumberFormat, *,
                    decompressed_mla: bool = False, kv_heads_divisor: int = 1,
                    ignore_windows: bool = False, hold_all: bool = False) -> list[KvLayers]:
    """KV cache split by window: a sliding-window layer holds min(tokens, window) tokens (formulas.md, KV cache).

    bytes = layers × elements per token × held tokens × batch × bits / 8, with the elements divided over
    ``kv_heads_divisor`` tensor-parallel ranks where the heads shard. ``ignore_windows``: every layer holds all
    ``tokens`` (transformers' DynamicCache right after a prefill, before its next update crops the window), as one
    group; ``hold_all``: the same, each window's layers still a group of their own.
    """
    bits = Fraction(str(fmt.bits_per_weight))
    out = []
    for window, count, layer in kv_groups(arch, ignore_windows=ignore_windows):
        held = tokens if window is None or hold_all else minimum(tokens, window)
        elements = kv_elements_per_token(arch, layer, decompressed_mla=decompressed_mla)
        per_rank = math.ceil(elements / kv_heads_divisor)
        out.append(KvLayers(window, count, held, bytes_of(count * per_rank * held * batch, bits)))
    return out


@cache
def kv_groups(arch: Architecture, *, ignore_windows: bool = False) -> tuple[tuple[int | None, int, int], ...]:
    """(window, layers, one of those layers) for every group of attention layers whose tokens cache alike: one per
    window (`window_groups`), split where only some layers run an indexer (GLM-5.2), those with one first."""
    out: list[tuple[int | None, int, int]] = []
    for window, count in window_groups(arch, ignore_windows=ignore_windows):
        if not arch.indexer_layers:
            out.append((window, count, 0))
            continue
        members = [i for i in range(arch.num_layers)
                   if arch.mixer(i) == "attention" and (ignore_windows or arch.window(i) == window)]
        for indexed in (True, False):
            chosen = [i for i in members if arch.has_indexer(i) == indexed]
            if chosen:
                out.append((window, len(chosen), chosen[0]))
    return tuple(out)


@cache  # pure, of a frozen spec, asked at every step of a capacity search
def window_groups(arch: Architecture, *, ignore_windows: bool = False) -> tuple[tuple[int | None, int], ...]:
    """(window, layers) for every distinct attention window, global (None) first, then by window length; attention
    layers only (a hybrid's Mamba and DeltaNet layers hold a fixed state instead, `estimator.model.state`)."""
    groups = arch.kv_window_groups(ignore_windows=ignore_windows)
    return tuple(sorted(groups.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0)))


def kv_cache_bytes(arch: Architecture, tokens: int, batch: int, fmt: NumberFormat, *,
                   decompressed_mla: bool = False, kv_heads_divisor: int = 1, ignore_windows: bool = False) -> int:
    """Total KV cache for ``batch`` sequences of ``tokens`` each (see `kv_cache_layers`)."""
    return sum(g.bytes for g in kv_cache_layers(arch, tokens, batch, fmt, decompressed_mla=decompressed_mla,
                                                 kv_heads_divisor=kv_heads_divisor, ignore_windows=ignore_windows))


def kv_heads_divisor(arch: Architecture, tensor_parallel: int) -> int:
    """How many ways TP splits the KV cache: KV heads shard until each rank holds one head, then replicate.

    The latent cache of multi-head latent attention has no heads to split: every rank holds all of it (vLLM).
    """
    if arch.attention.latent is not None:
        return 1
    return min(tensor_parallel, arch.attention.num_kv_heads)


@dataclass(frozen=True)
class ActivationPeak:
    """The prefill transient beyond weights and KV cache: the larger of the layer and the logits stage."""

    layer_bytes: int
    logits_bytes: int

    @property
    def bytes(self) -> int:
        return maximum(self.layer_bytes, self.logits_bytes)


# Activations that transformers writes as a chain of elementwise PyTorch ops keep extra ffn-wide temporaries alive
# in eager mode: gelu_new = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) holds x, 0.5·x and the running chain beside
# the output (two more than a fused kernel). Measured: gpt2-xl prefill peak −45% without them (docs/accuracy.md).
EAGER_ACTIVATION_TEMPORARIES = {"gelu_new": 2}
# Hidden-wide tensors a family's transformers code keeps alive through the MLP beyond the residual stream and its
# normed copies (4 × h) every family holds: GPT-2 holds its position embeddings' output (GPT2Model.forward's
# `position_embeds`, a local beside `inputs_embeds` for the whole layer loop) and the attention output
# (GPT2Block.forward's `attn_output`, a local through the MLP). CUDA memory history of gpt2-xl's prefill peak
# (2 layers, 1,024 tokens, bf16; tests/data/measured/peak-traces/gpt2-xl.json): 6 hidden-wide tensors alive, not 4.
# The position embeddings' output is 1 × s × h, one row per position shared by the batch (EAGER_POSITION_LOCALS):
# the random gpt2 rows at batch 2-8 read (batch − 1) × s × h × the element size high with it counted per token.
EAGER_HIDDEN_LOCALS = {"gpt2": 1}
EAGER_POSITION_LOCALS = {"gpt2": 1}


def moe_live_bytes(arch: Architecture, element_bytes: int, tensor_parallel: int = 1) -> int:
    """Per-token bytes alive in a MoE layer during prefill.

    Tokens are replicated once per routed expert (k rows each), so every per-row tensor scales with k. Up stage:
    the gathered input (h) and two gate-up-wide tensors (2 × 2·ffn) per row. Down stage: the gathered input and
    the down output per row, then the output weighted by its routing weight and the scattered sum — in fp32 where
    the router keeps fp32 weights (DeepSeek), else in the activation dtype. Shared experts run apart. The peak is
    the largest. Measured on transformers 5.17's grouped_mm experts by CUDA memory history of the peak
    (lab/measure/peak_trace.py, H200): qwen3-30b-a3b 148,560 B, mixtral-8x7b 279,138 B and deepseek-v2-lite
    164,630 B per token, each within 0.2%. Fused engines (vLLM fused_moe) hold k × (3·ffn + h); this bounds it.
    A latent MoE (Nemotron-3 Super) routes its rows in the latent width: h is that width here.
    """
    assert arch.moe is not None
    moe = arch.moe
    k, h, e = moe.experts_per_token, moe.expert_width_in(arch.hidden_size), element_bytes
    weighted = 4 if moe.fp32_routing_weights else e
    expert = math.ceil(moe.expert_intermediate_size / tensor_parallel)
    up = k * (h + 4 * expert) * e
    down = k * h * (2 * e + 2 * weighted)
    shared = (3 if arch.mlp.gated else 2) * math.ceil(moe.shared_intermediate_size / tensor_parallel) * e
    return max(up, down, shared)


# PyTorch's math SDPA at its peak (inside _safe_softmax), per score: the scores plus the causal bias (fp32, the
# add's output), the softmax output (fp32) and the boolean "row is all −inf" test = 4 + 4 + 1 bytes; beside them
# the fp32 causal bias of s × s, the scaled query and the value heads repeated for every query head (fp32). Traced
# op by op (TorchDispatchMode) and measured on the H200: 8 heads, 2 KV heads, 4,096 tokens, head_dim 64 allocates
# 1,232 MiB = 9 × 8 × 4,096² + 4 × 4,096² + 2 × 8 × 4,096 × 64 × 4 bytes; + 16 MiB per 64 more head_dim.
MATH_SDPA_BYTES_PER_SCORE = 9
MATH_SDPA_BIAS_BYTES = 4


def math_attention_bytes(arch: Architecture, batch: int, tokens: int, element_bytes: int,
                         tensor_parallel: int = 1) -> int:
    """The live set of a layer whose attention runs PyTorch's math kernel (see `MATH_SDPA_BYTES_PER_SCORE`): the
    residual stream and its normed copies (4 × h), the rotated query, the kernel's fp32 scaled query and repeated
    values, the scores, and the causal bias."""
    heads = math.ceil(arch.attention.num_heads / tensor_parallel)
    q_width = heads * arch.attention.head_dim
    per_token = 4 * arch.hidden_size * element_bytes + q_width * element_bytes + 2 * q_width * 4
    scores = batch * heads * tokens * tokens
    return batch * tokens * per_token + MATH_SDPA_BYTES_PER_SCORE * scores + MATH_SDPA_BIAS_BYTES * tokens * tokens


def prefill_activation_peak(arch: Architecture, batch: int, tokens: int, *, element_bytes: int,
                            logits_all: bool, logits_fp32: bool, tensor_parallel: int = 1,
                            eager_attention: bool = False, eager_activations: bool = False,
                            explicit_mask: bool = False) -> ActivationPeak:
    """Largest set of live tensors during one prefill forward, excluding weights and the KV cache.

    Layer stage, inside the MLP: per token, the residual stream and its normed copies (4 × h) and the MLP
    intermediates alive together (gated: act(gate), up and their product = 3 × ffn; plain: 2 × ffn), in the
    activation dtype; beside them the rotary cos/sin tables (2 × the rotated width; MLA rotates only
    qk_rope_head_dim) and one int64 position id. Measured exactly on Llama-3.2-1B and Llama-3.1-8B
    (h200-measured.jsonl, ``peak_minus_before`` − ``kept_after``). MoE layers hold the top-k experts'
    intermediates for every token. Where the query is wide the layer's peak is its attention's entry instead
    (`attention_entry_bytes`). Math-kernel attention (``eager_attention``, `attention_kernels.runs_math_attention`)
    materialises the b × a × s² scores: `math_attention_bytes`.

    Logits stage: the final hidden states and rotary tables, plus b × positions × vocab logits in the activation
    dtype (and their fp32 upcast where the runtime does it). positions = all tokens, or 1 with ``logits_to_keep=1``.
    Final-logit soft-capping (Gemma 2) keeps a second logits tensor live (measured: −50% without it).
    Under tensor parallelism the vocab-parallel head does not split the logits: each rank computes its
    ⌈vocab / tp⌉ columns, then the gather that sampling needs materialises all of them beside that shard
    (transformers' ``lm_head: colwise_rep`` all-gathers its output; vLLM's LogitsProcessor gathers to the sampling
    rank), so the rank that samples holds the full logits + its shard.
    ``eager_activations`` (transformers' own code): activations written as elementwise chains add
    `EAGER_ACTIVATION_TEMPORARIES`; families that hold more hidden-wide locals add `EAGER_HIDDEN_LOCALS` per token
    and `EAGER_POSITION_LOCALS` per position; the rotary tables and position ids are one row per position, shared
    by the batch (`_positional_bytes`). ``explicit_mask``: a boolean 1 × 1 × s × s attention mask is alive through
    the layers, broadcast over the batch (`attention_kernels.prefill_masked_attention`; measured: gemma-3-1b 2,048 B
    per token at b1 s2,048, and s² at b8 — traced, transformers 5.17 builds it from positions alone when no
    padding mask is passed; a padded batch's attention_mask makes it b × s × s).
    """
    h = arch.hidden_size
    temporaries = EAGER_ACTIVATION_TEMPORARIES.get(arch.hidden_act or "", 0) if eager_activations else 0
    hidden_copies = 4 + (EAGER_HIDDEN_LOCALS.get(arch.model_type, 0) if eager_activations else 0)
    # gated: act(gate), up and their product; a fused gate_up projection keeps its whole 2·ffn output alive instead
    # of up alone (measured: phi-3-mini −18% without it, docs/accuracy.md)
    per_ffn = (4 if arch.mlp.fused_gate_up else 3 if arch.mlp.gated else 2) + temporaries
    mlp_bytes = per_ffn * math.ceil(arch.mlp.intermediate_size / tensor_parallel) * element_bytes
    router_bytes = 0
    if arch.moe is not None and arch.num_moe_layers:
        moe = arch.moe
        mlp_bytes = max(moe_live_bytes(arch, element_bytes, tensor_parallel),
                        mlp_bytes if arch.num_moe_layers < arch.num_layers else 0)
        router_bytes = moe.num_experts * (element_bytes + 4)  # router logits, and their fp32 softmax
    tokens_total = batch * tokens
    shared, logits_shared = _positional_bytes(arch, batch, tokens, element_bytes, eager=eager_activations)
    layer = tokens_total * (mlp_bytes + hidden_copies * h * element_bytes + router_bytes) + shared
    if eager_activations:
        layer = maximum(layer, attention_entry_bytes(arch, tokens_total, element_bytes, tensor_parallel) + shared)
    if any_true(eager_attention):  # elementwise on a sweep's arrays, as the mask
        layer = where(eager_attention, maximum(layer, math_attention_bytes(arch, batch, tokens, element_bytes,
                                                                           tensor_parallel)), layer)
    layer = layer + where(explicit_mask, tokens * tokens, 0)
    positions = tokens if logits_all else 1
    logits_elements = batch * positions * arch.vocab_size if arch.lm_head else 0
    copies = 2 if arch.final_logit_softcapping else 1
    logits = logits_elements * (copies * element_bytes + (4 if logits_fp32 else 0))
    if tensor_parallel > 1 and arch.lm_head:  # the rank's vocab shard, alive while the gather fills the whole
        logits += batch * positions * -(-arch.vocab_size // tensor_parallel) * element_bytes
    logits_stage = tokens_total * h * element_bytes + logits_shared + logits
    return ActivationPeak(layer, logits_stage)


def _positional_bytes(arch: Architecture, batch: int, tokens: int, element_bytes: int, *,
                      eager: bool) -> tuple[int, int]:
    """Bytes of the tensors every layer of a prefill shares, and the part of them the logits stage still holds:
    the rotary cos/sin tables, the int64 position ids and the locals of `EAGER_POSITION_LOCALS`.
    transformers' code (``eager``) builds position ids as ``arange(s).unsqueeze(0)`` when the caller passes none
    (LlamaModel.forward and its copies, 5.17), so the tables are 1 × s × the rotated width, shared by the batch:
    counted per token, every random llama / qwen2 / mistral prefill at batch 2-8 read (batch − 1) × s × (2 ×
    head_dim × element size + 8) high (docs/accuracy.md, "Memory"). They are locals of the model's forward, gone
    when the LM head runs (traced: a 4,096-token all-logits prefill holds the logits and the normed hidden states
    alone; counted, every such random row read the tables' bytes high). Other runtimes: per token, to the end."""
    latent = arch.attention.latent
    rotated = latent.qk_rope_head_dim if latent is not None else arch.attention.head_dim
    rope = 2 * rotated * element_bytes if arch.position_embeddings == 0 else 0
    rows = tokens if eager else batch * tokens
    locals_ = tokens * EAGER_POSITION_LOCALS.get(arch.model_type, 0) * arch.hidden_size * element_bytes \
        if eager else 0
    return rows * (rope + 8) + locals_, 0 if eager else rows * rope


def attention_entry_bytes(arch: Architecture, tokens: int, element_bytes: int, tensor_parallel: int = 1) -> int:
    """The live set where transformers rotates the query (``q * cos + rotate_half(q) * sin``), per layer: the
    projected query, ``q * cos``, ``rotate_half(q)`` and its product with sin (4 query widths), and the residual
    stream, its normed copy and the embedding (3 × h). The key and value projections alive beside them are the
    size of the layer's cache, not yet written (the cache is counted whole apart). A masked layer's SDPA, holding
    the repeated keys and values beside the query and its output, is no larger. Above the MLP's live set where
    heads × head_dim is wide against the MLP: a random gemma2 of 46 heads × 256 over h = 2,944 read −30% at every
    shape without it; traced op by op (lab/measure/live_set_cpu.py) its peak is this set exactly, and the H200's
    within 512 bytes (docs/accuracy.md, "Memory"). 0 without rotary embeddings or with latent attention."""
    att = arch.attention
    if arch.position_embeddings or att.latent is not None:
        return 0
    heads = math.ceil(att.num_heads / tensor_parallel)
    return tokens * (4 * heads * att.head_dim + 3 * arch.hidden_size) * element_bytes


def runtime_overhead_bytes(capacity_bytes: int, profile: EfficiencyProfile, *, tensor_parallel: int,
                           dynamic_bytes: int) -> int:
    """Memory beyond tensors on each GPU: driver reservation, CUDA context, library workspaces, NCCL buffers,
    and allocator slack on the dynamic (KV + activation) memory. Each constant is in the profile with its source.
    """
    reserved = round(capacity_bytes * profile.driver_reserved_fraction)
    nccl = profile.nccl_buffer_bytes if tensor_parallel > 1 else 0
    slack = round_half_even(dynamic_bytes * profile.allocator_slack_fraction, like=dynamic_bytes)
    return reserved + profile.cuda_context_bytes + profile.workspace_bytes + nccl + slack


@cache  # pure, of frozen specs: the capacity searches ask for it at every step
def sharded_weights_bytes(arch: Architecture, fmt: NumberFormat, tensor_parallel: int) -> int:
    """Weights on one of ``tensor_parallel`` ranks: linear layers and the (vocab-parallel) embedding and head
    split evenly; norms, biases, routers and position tables are replicated on every rank (Megatron/vLLM).

    By role, as `weight_shares` counts them (a checkpoint's stored bytes per role too; sharding depends on the
    role alone), each sharded role's bytes rounded up once: on one rank this is exactly `weights_bytes`."""
    return sum(-(-s.bytes // tensor_parallel) if _is_sharded_role(s.role) else s.bytes
               for s in weight_shares(arch, fmt))


def _is_sharded(group: TensorGroup) -> bool:
    return _is_sharded_role(group.role)


def _is_sharded_role(role: Role) -> bool:
    return role.is_linear or role in (Role.EMBEDDING, Role.LM_HEAD)


def stored_format(arch: Architecture, stored: StoredWeights, base: NumberFormat) -> NumberFormat:
    """``base`` (the compute dtype's format) carrying a checkpoint's bytes per role, as its headers give them.

    A role's elements are the architecture's count where it has the role (a packed int4 tensor's header counts
    int32 words, not weights), else the files'; its bits are bytes × 8 / elements, so Σ bytes is the files'."""
    numel: dict[str, int] = {}
    for group in tensor_inventory(arch):
        numel[group.role.value] = numel.get(group.role.value, 0) + group.total
    roles = tuple((r, numel.get(r) or elements, b) for r, elements, b in stored.roles if elements and b)
    weights = sum(n for _, n, _ in roles) or 1
    return base.model_copy(update={
        "name": stored.format_name, "aliases": (), "scope": "all", "group_size": None, "group_overhead_bits": None,
        "bits_per_weight": min(64.0, 8 * stored.bytes / weights), "stored_roles": roles,
        "description": f"the checkpoint's {stored.files} {stored.source} file(s) as their headers store them"})


def replicated_weights_bytes(arch: Architecture, fmt: NumberFormat) -> int:
    """The weights every tensor-parallel rank holds whole (norms, biases, routers, position tables): what
    `sharded_weights_bytes` does not divide."""
    if fmt.stored_roles:
        return sum(s.bytes for s in weight_shares(arch, fmt) if not _is_sharded_role(s.role))
    return sum(bytes_of(g.total, tensor_bits(g.role, fmt)) for g in tensor_inventory(arch) if not _is_sharded(g))
