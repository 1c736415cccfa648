"""Notes: the warnings, assumptions and arithmetic lines of every report, as typed records worded late.

A `Note` is a `NoteCode` and the values the sentence needs — bytes as ints (a float where a byte count is a mean),
seconds and rates as floats, names as strings. The calculation builds notes; nothing downstream reads their text
(code selects, as ``sweep`` does for its per-row warnings). `word` turns a note into a sentence with byte counts in
decimal GB (``binary=False``, the default) or binary GiB (``--units gib``); rates stay decimal, as datasheets say.

The wording lives here, not in ``render/``: JSON keeps a sentence beside each record (``{"code", "values", "text"}``,
decimal units) and `report.flatten` joins them into a CSV column, so the report models need it; renderers call `word`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from functools import partial
from typing import Any

from pydantic import computed_field, model_validator

from estimator.notes.arithmetic import EXPECTED as _EXPECTED
from estimator.notes.arithmetic import PHASE_SPECS as _PHASE_SPECS
from estimator.notes.arithmetic import TIERS, Bytes, divided, expected, gpu_buffers, kv_split, span, weights_split
from estimator.notes.expert_notes import SPECS as _EXPERT_SPECS
from estimator.notes.model_notes import SPECS as _MODEL_SPECS
from estimator.notes.training_notes import OVERLAP, amp, deepspeed, fp8_training, no_overlap, overlap
from estimator.report import Frozen
from estimator.units import format_bytes, format_rate_bytes, format_seconds

NoteValue = bool | int | float | str | None


class NoteCode(str, Enum):
    """Every note a report can carry. The value is the JSON spelling."""

    # warnings
    COMPUTE_FALLBACK = "compute-fallback"
    TRAIN_COMPUTE_FALLBACK = "train-compute-fallback"
    NO_FITTING_GROUP = "no-fitting-group"
    NEEDS_MORE_GPUS = "needs-more-gpus"
    TIME_HYPOTHETICAL = "time-hypothetical"
    FLAT_FORMAT = "flat-format"
    LOW_HEADROOM = "low-headroom"
    SIZE_ONLY_NO_KV = "size-only-no-kv"
    SIZE_ONLY_NO_CAPACITY = "size-only-no-capacity"
    SIZE_ONLY_TIME = "size-only-time"
    ENCODER = "encoder"
    UNCOUNTED_TOWERS = "uncounted-towers"
    READ_NOT_HELD = "read-not-held"
    UNREAD_FIELDS = "unread-fields"
    DEFAULTED_FIELDS = "defaulted-fields"
    CONTEXT_TOO_LONG = "context-too-long"
    SEQ_LEN_TOO_LONG = "seq-len-too-long"
    CONTEXT_LIMIT = "context-limit"
    SELECTIVE_RECOMPUTE_NOOP = "selective-recompute-noop"
    PIPELINE_BUBBLE = "pipeline-bubble"
    TRAIN_DOES_NOT_FIT = "train-does-not-fit"
    NO_PRICE = "no-price"
    TP_CROSSES_DOMAIN = "tp-crosses-domain"
    # assumptions
    PROFILE = "profile"
    MLA_CACHE = "mla-cache"
    CAPACITY_REPORTED = "capacity-reported"
    CAPACITY_MARKETED = "capacity-marketed"
    CAPACITY_INSTALLED = "capacity-installed"
    CAPACITY_UNIFIED = "capacity-unified"
    CAPACITY_OVERRIDE = "capacity-override"
    KV_FULL_CONTEXT = "kv-full-context"
    LOGITS = "logits"
    TENSOR_PARALLEL = "tensor-parallel"
    GPU_BUFFERS = "gpu-buffers"
    PREFILL_CHUNK = "prefill-chunk"
    HOST_BOUND = "host-bound"
    DECODE_ATTENTION = "decode-attention"
    TRAIN_DISPATCH = "train-dispatch"
    PREFILL_KERNELS = "prefill-kernels"
    PREFILL_ATTENTION = "prefill-attention"
    DECODE_MATH_ATTENTION = "decode-math-attention"
    DECODE_KERNELS = "decode-kernels"
    SAVED_ACTIVATIONS = "saved-activations"
    LOSS_ONLY = "loss-only"
    STEADY_STATE = "steady-state"
    NO_OVERLAP = "no-overlap"
    OVERLAP = "overlap"
    FP8_TRAINING = "fp8-training"
    AMP = "amp"
    DEEPSPEED = "deepspeed"
    LORA = "lora"
    PIPELINE_1F1B = "pipeline-1f1b"
    # oom: what a failed job's evidence says (estimator oom)
    OOM_REQUEST = "oom-request"
    OOM_DRIVER_RESERVED = "oom-driver-reserved"
    OOM_OUTSIDE_PYTORCH = "oom-outside-pytorch"
    OOM_OTHER_PROCESSES = "oom-other-processes"
    OOM_CACHE = "oom-cache"
    OOM_TENSOR = "oom-tensor"
    OOM_NO_TENSOR = "oom-no-tensor"
    OOM_ESTIMATE = "oom-estimate"
    OOM_BEYOND_ESTIMATE = "oom-beyond-estimate"
    PLAN_TENSOR_PARALLEL = "plan-tensor-parallel"
    PLAN_TTFT = "plan-ttft"
    PLAN_TOKENS = "plan-tokens"
    PLAN_LAYOUT = "plan-layout"
    PLAN_SCHEDULER = "plan-scheduler"
    CHECKPOINT_WEIGHTS = "checkpoint-weights"
    CHECKPOINT_OVERRIDDEN = "checkpoint-overridden"
    CHECKPOINT_HEADERS = "checkpoint-headers"
    MODEL_SOURCE = "model-source"
    TOWERS_COUNTED = "towers-counted"
    READ_BY_TRANSFORMERS = "read-by-transformers"
    STATE_PER_SEQUENCE = "state-per-sequence"
    OWNED_COST = "owned-cost"
    PRICE_SOURCE = "price-source"
    SYSTEM = "system"
    NO_SYSTEM = "no-system"
    # explain: the arithmetic behind the headline numbers
    WEIGHTS_PART = "weights-part"
    KV_PART = "kv-part"
    KV_PREFILL_FULL = "kv-prefill-full"
    PER_GPU_TOTAL = "per-gpu-total"
    PREFILL_BOUND = "prefill-bound"
    DECODE_BOUND = "decode-bound"
    PREFILL_EXPECTED = "prefill-expected"
    DECODE_EXPECTED = "decode-expected"
    MOE_DECODE = "moe-decode"
    EXPERT_PARALLEL = "expert-parallel"
    EXPERT_WEIGHTS = "expert-weights"
    EXPERT_ALL_TO_ALL = "expert-all-to-all"
    MODEL_STATES = "model-states"
    LAYER_ACTIVATIONS = "layer-activations"
    OUTPUT_AND_LOSS = "output-and-loss"
    PEAK_PHASE = "peak-phase"
    STEP_TIME = "step-time"


_Wording = Callable[[Mapping[str, Any], Bytes], str]
_NUM = (int, float)
_OPT_INT = (int, type(None))
_C = NoteCode

# code → (the values it carries and their types, its sentence). A float value also takes an int (a whole number).
_SPECS: dict[NoteCode, tuple[dict[str, type | tuple[type, ...]], _Wording]] = {
    _C.COMPUTE_FALLBACK: ({"gpu": str, "wanted": str, "used": str}, lambda v, b: (
        f"{v['gpu']} has no {v['wanted']} tensor rate; compute uses its {v['used']} peak "
        "(kernels dequantize or cast)")),
    _C.TRAIN_COMPUTE_FALLBACK: ({"gpu": str, "wanted": str, "used": str}, lambda v, b: (
        f"{v['gpu']} has no {v['wanted']} tensor rate; compute uses its {v['used']} peak")),
    _C.NO_FITTING_GROUP: ({"gpu": str}, lambda v, b: (
        f"does not fit on any tensor-parallel group of {v['gpu']} cards up to the model's head count")),
    _C.NEEDS_MORE_GPUS: ({"gpus": int, "gpu": str, "required": int}, lambda v, b: (
        f"does not fit on {v['gpus']} × {v['gpu']}: needs {v['required']}")),
    _C.TIME_HYPOTHETICAL: ({}, lambda v, b: (
        "times and tokens/s are hypothetical: this layout does not fit in memory (time.hypothetical)")),
    # vLLM's default gpu_memory_utilization is 0.9: the engine leaves 10 % of the card free
    _C.LOW_HEADROOM: ({"headroom_bytes": int, "capacity_bytes": int}, lambda v, b: (
        f"fits with only {b(v['headroom_bytes'])} to spare ({v['headroom_bytes'] / v['capacity_bytes']:.1%} of "
        f"{b(v['capacity_bytes'])}): serving engines keep about 10 % free (vLLM's gpu_memory_utilization 0.9), "
        "so it may not run")),
    _C.FLAT_FORMAT: ({"format": str, "bits": float}, lambda v, b: (
        f"{v['format']} is a flat {v['bits']:g} bits per weight with no scales (a lower bound): real checkpoints "
        "carry scales; use gptq-int4 or awq-int4 (4.156 bits), nf4 or q4_k_m")),
    _C.SIZE_ONLY_NO_KV: ({}, lambda v, b: (
        "KV cache and activations not computed: a model given only by its size has no architecture "
        "(pass a catalog name or a config.json)")),
    _C.SIZE_ONLY_NO_CAPACITY: ({}, lambda v, b: (
        "max_batch and max_context_tokens not computed: they need the KV cache and activations")),
    _C.ENCODER: ({"model": str}, lambda v, b: (
        f"{v['model']} is an encoder: no KV cache and no token-by-token decoding")),
    _C.CONTEXT_TOO_LONG: ({"tokens": int, "limit": int}, lambda v, b: (
        f"context {v['tokens']:,} tokens exceeds the model's max_position_embeddings {v['limit']:,}")),
    _C.SEQ_LEN_TOO_LONG: ({"tokens": int, "limit": int}, lambda v, b: (
        f"seq_len {v['tokens']:,} exceeds the model's max_position_embeddings {v['limit']:,}")),
    _C.SELECTIVE_RECOMPUTE_NOOP: ({"attention": str}, lambda v, b: (
        f"selective recompute changes nothing with {v['attention']} attention: its kernels already recompute "
        "the attention scores")),
    _C.PIPELINE_BUBBLE: ({"stages": int, "micro_batches": int, "idle_fraction": float}, lambda v, b: (
        f"pipeline of {v['stages']} stages with {v['micro_batches']} micro-batches idles {v['idle_fraction']:.0%} "
        "of the step; raise --grad-accum")),
    _C.TRAIN_DOES_NOT_FIT: ({"per_gpu_bytes": int, "capacity_bytes": int}, lambda v, b: (
        f"does not fit: needs {b(v['per_gpu_bytes'])} per GPU of {b(v['capacity_bytes'])}")),
    _C.NO_PRICE: ({}, lambda v, b: (
        "no card has a price: add purchase or per-hour prices with --prices (docs/planning.md)")),
    _C.TP_CROSSES_DOMAIN: ({"gpus": int, "domain": int, "link": str, "tier": str, "gb_per_s": float}, lambda v, b: (
        f"tensor parallel {v['gpus']} crosses the {v['domain']}-GPU {v['link']} domain: its all-reduces run over "
        f"{TIERS[v['tier']]} at {v['gb_per_s']:g} GB/s per direction (serving engines keep TP inside one domain)")),
    _C.PROFILE: ({"profile": str, "description": str}, lambda v, b: (
        f"efficiency profile '{v['profile']}': {v['description']}")),
    _C.MLA_CACHE: ({"layout": str}, lambda v, b: "multi-head latent attention: KV cache holds " + (
        "decompressed K and V per head (Hugging Face transformers' layout)" if v["layout"] == "decompressed" else
        "the compressed latent + RoPE key (kv_lora_rank + qk_rope_head_dim), as serving engines do")),
    # the device reports MiB, so the reported capacity is stated in GiB whatever the output units
    _C.CAPACITY_REPORTED: ({"capacity_bytes": int}, lambda v, b: (
        f"capacity is what the device reports: {format_bytes(v['capacity_bytes'], binary=True)} per GPU")),
    # the vendor's marketed figure is decimal GB by definition
    _C.CAPACITY_MARKETED: ({"capacity_bytes": int}, lambda v, b: (
        f"capacity is the marketed {v['capacity_bytes'] / 1e9:g} GB (reported figure unknown)")),
    # HBM stacks and GDDR chips come in binary sizes: where no device report is on record, the installed GiB
    _C.CAPACITY_INSTALLED: ({"capacity_bytes": int}, lambda v, b: (
        f"capacity is the installed {format_bytes(v['capacity_bytes'], binary=True)} (no device report on record)")),
    # a unified-memory machine: the share its GPU may use (macOS's wired limit, CUDA's total on a GB10)
    _C.CAPACITY_UNIFIED: ({"capacity_bytes": int, "pool_bytes": int}, lambda v, b: (
        f"capacity is the share of the {v['pool_bytes'] / 1e9:g} GB unified memory the GPU may use: "
        f"{format_bytes(v['capacity_bytes'], binary=True)} (the OS and other programs take theirs out of it; "
        "--gpu-memory sets another)")),
    _C.CAPACITY_OVERRIDE: ({"capacity_bytes": int}, lambda v, b: (
        f"capacity is --gpu-memory: {format_bytes(v['capacity_bytes'], binary=True)} per GPU")),
    _C.CONTEXT_LIMIT: ({"limit": int, "tokens": int}, lambda v, b: (
        f"max prompt + output is capped at the model's max_position_embeddings {v['limit']:,}; memory alone "
        f"would hold {v['tokens']:,} tokens (max_context_tokens_by_memory)")),
    _C.PREFILL_CHUNK: ({"tokens": int}, lambda v, b: (
        f"prefill runs in chunks of at most {v['tokens']:,} tokens (the profile's prefill_chunk_tokens, a serving "
        "engine's max_num_batched_tokens): the activation peak is one chunk's, whatever the prompt")),
    _C.KV_FULL_CONTEXT: ({}, lambda v, b: (
        "KV cache holds prompt + output tokens for every sequence; decode_step_s is the step at that full context "
        "(the longest); tokens/s is at the mean context of generation (prompt + output / 2); output is "
        "--output-tokens, 256 by default in estimate, plan and sweep (0: the prompt alone)")),
    _C.CHECKPOINT_WEIGHTS: ({"method": str, "summary": str}, lambda v, b: (
        f"weights as the checkpoint stores them (quantization_config {v['method']}): {v['summary']}; "
        "--dtype overrides")),
    _C.CHECKPOINT_OVERRIDDEN: ({"method": str, "format": str}, lambda v, b: (
        f"--dtype {v['format']} overrides the checkpoint's own format ({v['method']})")),
    _C.LOGITS: ({"positions": str}, lambda v, b: (
        f"logits computed for {'every prompt position' if v['positions'] == 'all' else 'the last position only'}")),
    _C.TENSOR_PARALLEL: ({"gpus": int}, lambda v, b: (
        f"tensor parallel over {v['gpus']} GPUs: linear layers and vocabulary split, norms replicated")),
    _C.GPU_BUFFERS: ({"gpus": int, "nccl_bytes": int, "ddp_bytes": int}, gpu_buffers),
    _C.SAVED_ACTIVATIONS: ({"residual": str, "attention": str}, lambda v, b: (
        "activations counted from the tensors PyTorch autograd saves in a Hugging Face transformers layer "
        f"({v['residual']} residual stream, {v['attention']} attention, no dropout)")),
    _C.LOSS_ONLY: ({}, lambda v, b: "the caller keeps only the loss (logits freed after the loss); "
                  "zero_grad(set_to_none=True)"),
    _C.STEADY_STATE: ({}, lambda v, b: "steady-state step: optimizer states exist from the previous step"),
    _C.NO_OVERLAP: ({}, no_overlap), _C.OVERLAP: (OVERLAP, overlap), _C.AMP: ({}, amp), _C.DEEPSPEED: ({}, deepspeed),
    _C.FP8_TRAINING: ({}, fp8_training),
    _C.LORA: ({"rank": int, "targets": str, "base": str}, lambda v, b: (
        f"LoRA rank {v['rank']} on {v['targets']} of every layer; frozen base in {v['base']}; adapters in fp32 "
        "under autocast (PEFT)")),
    _C.PIPELINE_1F1B: ({"in_flight": int, "virtual_stages": int}, lambda v, b: (
        f"1F1B pipeline (Narayanan et al. 2021): the first stage keeps {v['in_flight']} micro-batches in flight"
        + ("" if v["virtual_stages"] == 1 else
           f"; interleaved, {v['virtual_stages']} chunks per GPU: (1 + (pp − 1)/(pp·v)) × the activations"))),
    _C.OOM_REQUEST: ({"requested_bytes": int, "free_bytes": _OPT_INT}, lambda v, b: (
        f"the failed request asked for {b(v['requested_bytes'])}"
        + ("" if v["free_bytes"] is None else f" while {b(v['free_bytes'])} of the card was free"))),
    _C.OOM_DRIVER_RESERVED: ({"reported_bytes": int, "capacity_bytes": int}, lambda v, b: (
        f"CUDA reports {b(v['reported_bytes'])} of the card's {b(v['capacity_bytes'])}; the rest is the driver's "
        "reservation, part of the estimate's overhead")),
    _C.OOM_OUTSIDE_PYTORCH: ({"bytes": int}, lambda v, b: (
        f"outside PyTorch's allocator this process held {b(v['bytes'])} (CUDA context, cuBLAS/cuDNN workspaces, "
        "NCCL buffers)")),
    _C.OOM_OTHER_PROCESSES: ({"bytes": int}, lambda v, b: f"other processes held {b(v['bytes'])} of the card"),
    _C.OOM_CACHE: ({"allocated_bytes": int, "unallocated_bytes": int, "fragmented": bool,
                   "largest_free_bytes": _OPT_INT}, lambda v, b: (
        f"PyTorch held {b(v['allocated_bytes'])} in tensors and {b(v['unallocated_bytes'])} reserved but in no "
        "tensor" + ("" if not v["fragmented"] else ": the cache held more than the request, in no block large "
                    "enough (fragmentation" + ("" if v["largest_free_bytes"] is None else
                                               f"; largest free block {b(v['largest_free_bytes'])} in the snapshot")
                    + ")"))),
    _C.OOM_TENSOR: ({"name": str, "term": str, "arithmetic": str, "tensor_bytes": int, "evidence": str},
                   lambda v, b: (
        f"the request was most likely the {v['name']}, in the estimate's {v['term']} term: {v['arithmetic']} = "
        f"{v['tensor_bytes']:,} B ({v['evidence']})")),
    _C.OOM_NO_TENSOR: ({}, lambda v, b: "no single tensor of the estimate has the request's size"),
    _C.OOM_ESTIMATE: ({"per_gpu_bytes": int, "capacity_bytes": int, "fits": bool, "largest_term": str,
                      "largest_term_bytes": int}, lambda v, b: (
        f"the estimate needs {b(v['per_gpu_bytes'])} per GPU of {b(v['capacity_bytes'])}: "
        + ("it fits" if v["fits"] else f"it does not fit by {b(v['per_gpu_bytes'] - v['capacity_bytes'])}")
        + f"; the largest term is {v['largest_term']}, {b(v['largest_term_bytes'])}")),
    _C.OOM_BEYOND_ESTIMATE: ({"allocated_bytes": int, "requested_bytes": int, "beyond_bytes": int}, lambda v, b: (
        f"PyTorch had {b(v['allocated_bytes'])} allocated and asked for {b(v['requested_bytes'])} more, "
        f"{b(v['beyond_bytes'])} beyond every tensor the estimate counts: tensors the program keeps (a cache never "
        "released, outputs held on the GPU) or another job on the card")),
    _C.PLAN_TENSOR_PARALLEL: ({}, lambda v, b: (
        "tensor-parallel degrees divide the attention heads (and the KV heads, or are multiples of them)")),
    _C.PLAN_TTFT: ({}, lambda v, b: (
        "time to first token prefills every prompt of a replica's batch together; time per output token is the "
        "mean decode step over the output")),
    _C.PLAN_TOKENS: ({}, lambda v, b: (
        "tokens/s counts generated tokens (--output-tokens per request: 256 by default in estimate, plan and "
        "sweep); replicas are independent data-parallel copies")),
    _C.OWNED_COST: ({"years": float, "usd_per_kwh": float}, lambda v, b: (
        f"owned cost: server price over {v['years']:g} years + server power at ${v['usd_per_kwh']:g}/kWh "
        "(a server without a price: its cards' prices, host not priced); prices from specs are approximate")),
    _C.PLAN_LAYOUT: ({"headroom": float, "across": bool, "max_nodes": int}, lambda v, b: (
        "layouts: tensor parallel inside one NVLink/link domain"
        + (" (or across domains: --allow-tp-across-domains)" if v["across"] else "")
        + f", pipeline parallel across domains and nodes (up to {v['max_nodes']} servers per replica), MoE experts "
        f"spread over the tensor-parallel GPUs, replicas filling the GPUs bought (k of a server's N GPUs where it "
        f"is sold in that size, its partial_gpus: priced, powered and rented at k/N of it; else whole servers); "
        f"{v['headroom']:.0%} of each GPU's memory kept free (--headroom)")),
    _C.PLAN_SCHEDULER: ({"step_tokens": int}, lambda v, b: (
        f"continuous batching with chunked prefill: each step carries one token per running sequence and prompt "
        f"chunks up to {v['step_tokens']:,} tokens in all (--step-tokens); TPOT = decode step + the prefill work "
        "of arriving prompts shared over it; TTFT = a prompt's chunks + the M/D/1 wait for prefill")),
    _C.PRICE_SOURCE: ({"source": str}, lambda v, b: v["source"]),
    _C.SYSTEM: ({"system": str, "description": str, "nodes": int, "gpus_per_node": int, "link": str, "domain": int,
                "link_gb_per_s": float, "assumed": bool}, lambda v, b: (
        f"system {v['system']} ({v['description']}): {v['nodes']} × {v['gpus_per_node']} GPUs, {v['link']} joining "
        f"{v['domain']} at {v['link_gb_per_s']:g} GB/s per direction"
        + ("; assumed, as the common server for this GPU (--system to choose another)" if v["assumed"] else ""))),
    _C.NO_SYSTEM: ({"gpu": str}, lambda v, b: (
        f"no system in specs/systems holds {v['gpu']}: GPUs talk over the card's listed interconnect")),
    _C.WEIGHTS_PART: ({"role": str, "params": int, "bits": float, "bytes": int}, lambda v, b: (
        f"weights[{v['role']}]: {v['params']:,} params × {v['bits']:g} bits ÷ 8 = {b(v['bytes'])}")),
    _C.KV_PART: ({"window": _OPT_INT, "layers": int, "tokens": int, "sequences": int, "bytes_per_token_layer": int,
                 "elements": str, "kv_dtype": str, "total_bytes": int, "gpus": int, "split": int, "bytes": int},
                lambda v, b: (
        f"KV cache[{span(v['window'])}]: {v['layers']} layers × {v['tokens']:,} tokens × {v['sequences']} sequences × "
        f"{v['bytes_per_token_layer']:,} B/token/layer ({v['elements']} elements, {v['kv_dtype']}) = "
        f"{b(v['total_bytes'])}" + kv_split(v, b))),
    _C.KV_PREFILL_FULL: ({"layers": int, "tokens": int, "sequences": int, "bytes_per_token_layer": int, "split": int,
                         "bytes": int, "windowed_bytes": int}, lambda v, b: (
        f"KV cache per GPU: {b(v['bytes'])}, not the windowed {b(v['windowed_bytes'])}: right after the prefill every "
        f"layer holds the whole prompt ({v['layers']} layers × {v['tokens']:,} tokens × {v['sequences']} sequences × "
        f"{v['bytes_per_token_layer']:,} B/token/layer{divided(v['split'])}), as transformers' DynamicCache does "
        "before its next update crops the windows")),
    _C.PER_GPU_TOTAL: ({"gpus": int, "weights_bytes": int, "weights_total_bytes": int, "replicated_bytes": int,
                       "kv_bytes": _OPT_INT, "state_bytes": int, "activation_bytes": _OPT_INT, "overhead_bytes": int,
                       "per_gpu_bytes": int, "capacity_bytes": int, "fits": bool}, lambda v, b: (
        f"per GPU: weights {b(v['weights_bytes'])}{weights_split(v, b)} + "
        + ("KV not computed" if v["kv_bytes"] is None else f"KV {b(v['kv_bytes'])}")
        + (f" + recurrent state {b(v['state_bytes'])}" if v["state_bytes"] else "")
        + (" + activations not computed" if v["activation_bytes"] is None else
           f" + activations {b(v['activation_bytes'])}")
        + f" + overhead {b(v['overhead_bytes'])} = {b(v['per_gpu_bytes'])} of {b(v['capacity_bytes'])} "
        f"({'fits' if v['fits'] else 'does not fit'})")),
    _C.DECODE_BOUND: ({"bytes": float, "bandwidth_bytes_per_s": float, "seconds": float, "gpus": int}, lambda v, b: (
        f"decode bound: {b(v['bytes'])} ÷ {format_rate_bytes(v['bandwidth_bytes_per_s'])} = "
        f"{format_seconds(v['seconds'])} per token" + (" (per GPU)" if v["gpus"] > 1 else ""))),
    _C.PREFILL_EXPECTED: (_EXPECTED, lambda v, b: expected("prefill", v, b)),
    _C.DECODE_EXPECTED: (_EXPECTED, lambda v, b: expected("decode", v, b)),
    _C.MOE_DECODE: ({"experts": int, "per_token": int, "sequences": int, "experts_read": float}, lambda v, b: (
        f"MoE decode: {v['experts']} × (1 − (1 − {v['per_token']}/{v['experts']})^{v['sequences']}) = "
        f"{v['experts_read']:.2f} of {v['experts']} experts read per layer per step")),
    **{_C(code): spec for code, spec in {**_EXPERT_SPECS, **_PHASE_SPECS, **_MODEL_SPECS}.items()},
    _C.MODEL_STATES: ({"trainable_params": int, "weights_bytes": int, "gradient_bytes": int, "master_bytes": int,
                      "optimizer_bytes": int, "zero_stage": int, "dp": int, "model_parallel": int}, lambda v, b: (
        f"model states: {v['trainable_params']:,} trainable params → weights {b(v['weights_bytes'])} + grads "
        f"{b(v['gradient_bytes'])} + master {b(v['master_bytes'])} + optimizer {b(v['optimizer_bytes'])} per GPU "
        f"(ZeRO stage {v['zero_stage']}, dp {v['dp']}, tp×pp {v['model_parallel']})")),
    _C.LAYER_ACTIVATIONS: ({"bytes_per_token": float, "tokens": int, "bytes": int, "layers": int, "in_flight": int,
                           "full_recompute": bool}, lambda v, b: (
        f"activations per layer: {v['bytes_per_token']:,.0f} B/token × {v['tokens']:,} tokens = {b(v['bytes'])}; "
        f"{v['layers']} layers × {v['in_flight']} in flight"
        + (" (checkpoints only, full recompute)" if v["full_recompute"] else ""))),
    _C.OUTPUT_AND_LOSS: ({"saved_bytes": int, "loss_gradient_bytes": int}, lambda v, b: (
        f"output layer + loss: {b(v['saved_bytes'])} saved, {b(v['loss_gradient_bytes'])} of fp32 gradients at "
        "backward start")),
    _C.PEAK_PHASE: ({"phase": str, "tensor_bytes": int, "overhead_bytes": int, "per_gpu_bytes": int}, lambda v, b: (
        f"peak phase {v['phase']}: {b(v['tensor_bytes'])} of tensors + {b(v['overhead_bytes'])} runtime overhead = "
        f"{b(v['per_gpu_bytes'])}")),
    _C.STEP_TIME: ({"flops_per_gpu": float, "peak_flop_per_s": float, "efficiency": float, "compute_s": float,
                   "optimizer_s": float, "communication_s": float}, lambda v, b: (
        f"step: {v['flops_per_gpu']:.3e} FLOP per GPU ÷ ({v['peak_flop_per_s'] / 1e12:,.1f} TFLOP/s × "
        f"{v['efficiency']:.3f}) = {format_seconds(v['compute_s'])}; optimizer {format_seconds(v['optimizer_s'])}; "
        f"communication {format_seconds(v['communication_s'])}")),
}


def _fits_type(value: NoteValue, kind: type | tuple[type, ...]) -> bool:
    kind = _NUM if kind is float else kind
    return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


class Note(Frozen):
    """One warning, assumption or arithmetic line: its code and the values its sentence is made of."""

    code: NoteCode
    values: dict[str, NoteValue]

    @model_validator(mode="after")
    def _values_match_code(self) -> Note:
        kinds = _SPECS[self.code][0]
        if set(self.values) != set(kinds):
            raise ValueError(f"note {self.code.value} takes {sorted(kinds)}, got {sorted(self.values)}")
        wrong = [k for k, kind in kinds.items() if not _fits_type(self.values[k], kind)]
        if wrong:
            raise ValueError(f"note {self.code.value}: wrong type for {', '.join(wrong)}")
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def text(self) -> str:
        """The sentence in the default decimal units (what JSON and CSV carry beside the record)."""
        return word(self, binary=False)


def note(code: NoteCode, **values: NoteValue) -> Note:
    """``note(NoteCode.NEEDS_MORE_GPUS, gpus=1, gpu="NVIDIA A100", required=2)``."""
    return Note(code=code, values=values)


def word_values(code: NoteCode, values: Mapping[str, NoteValue], *, binary: bool) -> str:
    """``code``'s sentence with ``values``, bytes in GiB when ``binary`` else GB (no model built: as sweep's rows)."""
    return _SPECS[code][1](values, partial(format_bytes, binary=binary))


def word(item: Note, *, binary: bool) -> str:
    """``item`` as a sentence, byte counts in GiB when ``binary`` else GB."""
    return word_values(item.code, item.values, binary=binary)
