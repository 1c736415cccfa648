"""`estimate`: model + GPU + workload → Report. Orchestration only; every formula lives in `estimator.model`."""

from __future__ import annotations

from dataclasses import dataclass

from estimator.catalog.architecture import Architecture, ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.errors import FieldInvalid
from estimator.inference.expert_parallel import (
    ExpertParallel,
    ep_max_batch,
    ep_max_context,
    ep_memory,
    expert_notes,
    expert_parallel,
)
from estimator.inference.explain import explain as explain_lines
from estimator.inference.phase_notes import phase_notes
from estimator.inference.point_fields import memory_point_fields, time_point_fields
from estimator.inference.report import (
    KvPart,
    MemoryReport,
    Report,
    StatePart,
    TimeReport,
    WeightPart,
    WorkloadInfo,
)
from estimator.inference.workload import InferenceWorkload
from estimator.model.capacity import gpus_required, max_batch, max_context_tokens, within_position_limit
from estimator.model.collectives import gpu_in_group, group_link
from estimator.model.compute import expected_distinct_experts
from estimator.model.experts import experts_per_gpu as experts_held
from estimator.model.experts import held_expert_bytes
from estimator.model.footprint import GpuMemory, memory_per_gpu, peak_kv_layers, rank_kv_bytes
from estimator.model.inventory import active_param_count, param_count, tensor_inventory
from estimator.model.memory import generic_weights_bytes, weight_shares, weights_bytes
from estimator.model.parallel import valid_tensor_parallel
from estimator.model.phases import job_costs
from estimator.model.state import state_layers
from estimator.model.timing import Hardware, PhaseCost, PhaseTime, peak_for, phase_time
from estimator.notes import Note, NoteCode, note
from estimator.notes.config_notes import config_notes
from estimator.report import GpuInfo, ModelInfo


def placed(gpu: GpuSpec, system: SystemSpec | None, nodes: int, tp: int, *, assumed: bool = False,
           gpu_alone: bool = False) -> tuple[GpuSpec, list[Note], list[Note]]:
    """``gpu`` with the link its tensor-parallel group crosses in ``nodes`` × ``system``, and the notes that say so
    (assumptions, warnings). Without a system the card's listed interconnect stands; ``gpu_alone`` says the user
    named only a GPU, so the report says no system was found for it."""
    if system is None:
        return gpu, ([note(NoteCode.NO_SYSTEM, gpu=gpu.name)] if gpu_alone and tp > 1 else []), []
    if tp > nodes * system.gpus_per_node:
        raise FieldInvalid("gpus", "tensor parallel {count} needs {count} GPUs; {nodes_count} × {name} has "
                           "{gpus_count}", count=tp, nodes_count=nodes, name=system.name,
                           gpus_count=nodes * system.gpus_per_node)
    assumptions = [note(NoteCode.SYSTEM, system=system.name, description=system.description, nodes=nodes,
                        gpus_per_node=system.gpus_per_node, link=system.intra_node_link, domain=system.domain_gpus,
                        link_gb_per_s=system.link_gb_per_s, assumed=assumed)]
    warnings = []
    if tp > system.domain_gpus:
        link = group_link(system, tp)
        warnings.append(note(NoteCode.TP_CROSSES_DOMAIN, gpus=tp, domain=system.domain_gpus,
                             link=system.intra_node_link, tier=link.tier, gb_per_s=link.bytes_per_s / 1e9))
    return gpu_in_group(gpu, system, tp), assumptions, warnings


@dataclass(frozen=True)
class _Terms:
    """What the model's shape gives: its counts, where its weights and KV cache go, and each phase's work."""

    params: int
    active: int
    total_weights: int
    shares: tuple[WeightPart, ...]
    kv_parts: tuple[KvPart, ...]
    kv_per_token: int | None
    prefill: PhaseCost
    decode: PhaseCost  # at the full context (the longest step)
    step: PhaseCost  # at the mean context of generation (tokens/s)


def _terms(model: ModelSpec, w: InferenceWorkload, tp: int, kv_per_gpu: int, expert_groups: int = 1,
           gpus: int | None = None) -> _Terms:
    """The shape's terms for ``w`` on one of ``tp`` ranks; ``gpus``: what the KV parts' totals sum over (the EP
    group's GPUs, each attention group holding its own sequences' cache; default ``tp``)."""
    arch = model.arch
    costs = job_costs(model, w, tp, w.batch, w.prompt_tokens, w.output_tokens, kv_per_gpu,
                      expert_groups=expert_groups)
    if arch is None:  # a model known only by its size: weights, and 2 × params FLOPs per token
        assert model.generic_params is not None
        params = model.generic_params
        total_weights = generic_weights_bytes(params, w.weight_format)
        whole = WeightPart(role="all", params=params, bits_per_weight=w.weight_format.bits_per_weight,
                           bytes=total_weights)
        return _Terms(params, params, total_weights, (whole,), (), None, costs.prefill, costs.decode, costs.step)
    shares = tuple(WeightPart(role=s.role.value, params=s.numel, bits_per_weight=float(s.bits), bytes=s.bytes)
                   for s in weight_shares(arch, w.weight_format))
    kv_parts = tuple(KvPart(window=g.window, layers=g.layers, tokens=g.tokens, bytes=g.bytes,
                            total_bytes=g.bytes * (gpus or tp))
                     for g in peak_kv_layers(arch, w, tp, w.batch, w.prompt_tokens, w.output_tokens))
    return _Terms(param_count(arch), active_param_count(arch), weights_bytes(arch, w.weight_format), shares,
                  kv_parts, rank_kv_bytes(arch, w, 1, 1, 1), costs.prefill, costs.decode, costs.step)


@dataclass(frozen=True)
class _Times:
    hw: Hardware
    prefill: PhaseTime
    decode: PhaseTime | None  # None for an encoder (no token-by-token decoding)
    step: PhaseTime | None
    all_to_all_s: float = 0.0  # expert parallel: the all-to-all inside the prefill and one decode step


def _times(terms: _Terms, arch: Architecture | None, gpu: GpuSpec, w: InferenceWorkload, peak: float,
           ex: ExpertParallel | None = None) -> _Times:
    """Each phase's time for one attention group's ``w`` (under expert parallel, its all-to-all added)."""
    hw = Hardware(peak, gpu.bandwidth_bytes_per_s, gpu.memory_type, gpu.interconnect_bytes_per_s,
                  w.tensor_parallel, gpu.peak_flop_per_s("fp32"))
    decoding = arch is None or arch.causal
    act = w.activation_bytes_per_element
    prefill_a2a = 0.0 if ex is None else ex.all_to_all_s(w.batch * w.prompt_tokens, act)
    step_a2a = 0.0 if ex is None else ex.all_to_all_s(w.batch, act)
    return _Times(hw, phase_time(terms.prefill, hw, w.profile).with_communication(prefill_a2a),
                  phase_time(terms.decode, hw, w.profile).with_communication(step_a2a) if decoding else None,
                  phase_time(terms.step, hw, w.profile).with_communication(step_a2a) if decoding else None,
                  prefill_a2a + (step_a2a if decoding else 0.0))


def _warnings(model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, dtype: str, per_gpu: int,
              required: int | None) -> list[Note]:
    arch, tp = model.arch, w.tensor_parallel
    warnings = []
    if dtype != w.weight_format.compute_dtype:
        warnings.append(note(NoteCode.COMPUTE_FALLBACK, gpu=gpu.name, wanted=w.weight_format.compute_dtype,
                             used=dtype))
    if required is None:
        warnings.append(note(NoteCode.NO_FITTING_GROUP, gpu=gpu.name))
    elif per_gpu > gpu.memory_bytes:
        warnings.append(note(NoteCode.NEEDS_MORE_GPUS, gpus=tp, gpu=gpu.name, required=required))
    if per_gpu > gpu.memory_bytes:
        warnings.append(note(NoteCode.TIME_HYPOTHETICAL))
    elif low_headroom(gpu.memory_bytes - per_gpu, gpu.memory_bytes):
        warnings.append(note(NoteCode.LOW_HEADROOM, headroom_bytes=gpu.memory_bytes - per_gpu,
                             capacity_bytes=gpu.memory_bytes))
    fmt = w.weight_format
    if fmt.group_size is None and fmt.bits_per_weight <= 4 and fmt.scope == "linear":  # no scales: int4
        warnings.append(note(NoteCode.FLAT_FORMAT, format=fmt.name, bits=fmt.bits_per_weight))
    if arch is None:
        return [*warnings, note(NoteCode.SIZE_ONLY_NO_KV), note(NoteCode.SIZE_ONLY_NO_CAPACITY),
                note(NoteCode.SIZE_ONLY_TIME)]
    if not arch.causal:
        warnings.append(note(NoteCode.ENCODER, model=model.name))
    if model.uncounted_towers:
        warnings.append(note(NoteCode.UNCOUNTED_TOWERS, model=model.name, towers=", ".join(model.uncounted_towers)))
    warnings += [note(NoteCode.READ_NOT_HELD, model=model.name, what=what) for what in arch.read_notes]
    warnings += config_notes(model.name, arch.unread_fields, arch.defaulted_fields)
    if arch.max_position_embeddings and w.context_tokens > arch.max_position_embeddings:
        warnings.append(note(NoteCode.CONTEXT_TOO_LONG, tokens=w.context_tokens, limit=arch.max_position_embeddings))
    return warnings


def _capped(model: ModelSpec, memory: MemoryReport) -> list[Note]:
    """A note where max_context_tokens stops at the model's own limit before memory runs out."""
    by_memory, limit = memory.max_context_tokens_by_memory, memory.max_context_tokens
    if by_memory is None or limit is None or by_memory == limit:
        return []
    return [note(NoteCode.CONTEXT_LIMIT, limit=limit, tokens=by_memory)]


def low_headroom(headroom: int, capacity: int) -> bool:
    """Fits, but with less than the ~10 % of the card that serving engines keep free (vLLM's default
    gpu_memory_utilization 0.9); in integers, exactly: headroom / capacity < 1 / 10."""
    return headroom >= 0 and 10 * headroom < capacity


def _checkpoint_note(model: ModelSpec, w: InferenceWorkload) -> list[Note]:
    """Whether the weights are the checkpoint's own format (file headers, quantization_config) or --dtype's."""
    s, c = model.stored, model.checkpoint
    if s is not None:
        if w.weight_format.name == s.format_name:
            return [note(NoteCode.CHECKPOINT_HEADERS, source=s.source, files=s.files, tensors=s.tensors,
                         bytes=s.bytes)]
        return [note(NoteCode.CHECKPOINT_OVERRIDDEN, method=f"{s.source} headers", format=w.weight_format.name)]
    if c is None:
        return []
    if w.weight_format.name == c.format_name:
        # the roles stored in fewer than 16 bits: which ones the checkpoint's format covers
        covered = [] if model.arch is None else [share.role.value for share in weight_shares(model.arch,
                                                 w.weight_format) if share.bits < 16]
        summary = c.summary + (f"; covers {', '.join(covered)}" if covered else "")
        return [note(NoteCode.CHECKPOINT_WEIGHTS, method=c.method, summary=summary)]
    return [note(NoteCode.CHECKPOINT_OVERRIDDEN, method=f"quantization_config {c.method}", format=w.weight_format.name)]


def _towers_note(model: ModelSpec) -> list[Note]:
    """A multimodal model's towers, counted beside its text model: which, and how many parameters each."""
    if model.arch is None or not model.arch.towers:
        return []
    params: dict[str, int] = {}
    for group in tensor_inventory(model.arch):
        if group.role.is_tower:
            params[group.role.value] = params.get(group.role.value, 0) + group.total
    towers = " and ".join(f"{role.replace('_', ' ')} ({n:,} params)" for role, n in params.items())
    return [note(NoteCode.TOWERS_COUNTED, model=model.name, towers=towers)]


def _assumptions(model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload) -> list[Note]:
    arch = model.arch
    mla = arch is not None and arch.attention.latent is not None
    return [
        *([note(NoteCode.MODEL_SOURCE, source=model.origin)] if model.origin is not None else []),
        *_checkpoint_note(model, w),
        *_towers_note(model),
        *([note(NoteCode.READ_BY_TRANSFORMERS, model=model.name, reader=arch.read_by)] if arch and arch.read_by
          else []),
        *([note(NoteCode.MLA_CACHE, layout=w.mla_layout)] if mla else []),
        note(NoteCode.PROFILE, profile=w.profile.name, description=w.profile.description),
        _capacity_note(gpu),
        note(NoteCode.KV_FULL_CONTEXT),
        note(NoteCode.LOGITS, positions=w.logits),
        *([note(NoteCode.TENSOR_PARALLEL, gpus=w.tensor_parallel),
           note(NoteCode.GPU_BUFFERS, gpus=w.tensor_parallel, nccl_bytes=w.profile.nccl_buffer_bytes, ddp_bytes=0)]
          if w.tensor_parallel > 1 else []),
        *([note(NoteCode.PREFILL_CHUNK, tokens=w.profile.prefill_chunk_tokens)]
          if w.profile.prefill_chunk_tokens is not None else []),
        *[note(NoteCode.STATE_PER_SEQUENCE, layers=g.layers, kind=g.kind, bytes_per_sequence=g.bytes_per_sequence)
          for g in (state_layers(arch, w.activation_bytes_per_element) if arch is not None else [])],
    ]


def _memory_report(model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, terms: _Terms, mem: GpuMemory,
                   required: int | None, searches: bool, ex: ExpertParallel | None = None) -> MemoryReport:
    """Per-GPU and total memory; under expert parallel the totals are over the EP group's GPUs."""
    tp, capacity = w.tensor_parallel if ex is None else ex.gpus, gpu.memory_bytes
    by_memory = None
    if searches:
        by_memory = (max_context_tokens(model, gpu, w, tp, w.batch, w.output_tokens) if ex is None
                     else ep_max_context(model, gpu, w, ex))
    largest = None
    if searches:
        largest = max_batch(model, gpu, w, tp, w.prompt_tokens, w.output_tokens) if ex is None else \
            ep_max_batch(model, gpu, w, ex)
    return MemoryReport(
        **memory_point_fields(mem, tp, capacity),
        weights_bytes=terms.total_weights,
        weights_per_gpu_bytes=mem.weights,
        capacity_bytes=capacity,
        gpus_required=required,
        max_batch=largest,
        max_context_tokens=within_position_limit(model, by_memory),
        max_context_tokens_by_memory=by_memory,
        weights_replicated_bytes=mem.weights * tp - terms.total_weights,
        kv_cache_per_token_bytes=terms.kv_per_token,
        weights_by_role=terms.shares,
        kv_by_window=terms.kv_parts,
        state_by_kind=_state_parts(model, w if ex is None else w.model_copy(update={"batch": w.batch // ex.groups})),
        experts_per_gpu=None if ex is None else experts_held(ex.arch, ex.ep),
        expert_weights_per_gpu_bytes=None if ex is None else held_expert_bytes(ex.arch, w.weight_format, ex.ep),
    )


def _state_parts(model: ModelSpec, w: InferenceWorkload) -> tuple[StatePart, ...]:
    if model.arch is None:
        return ()
    tp = w.tensor_parallel
    return tuple(StatePart(kind=g.kind, layers=g.layers, bytes_per_sequence=g.bytes_per_sequence,
                           bytes=-(-g.bytes(w.batch) // tp))
                 for g in state_layers(model.arch, w.activation_bytes_per_element))


def _time_report(terms: _Terms, times: _Times, w: InferenceWorkload, experts_read: float | None,
                 fits: bool, ex: ExpertParallel | None = None) -> TimeReport:
    """The times of ``w`` (the whole job: under expert parallel every attention group steps at once, so tokens/s
    is the job's batch over one group's step; FLOPs and bytes summed over the EP group's GPUs)."""
    return TimeReport(
        **time_point_fields(terms.prefill, terms.decode, times.prefill, times.decode, times.step, w.batch,
                            w.tensor_parallel if ex is None else ex.gpus),
        experts_read_per_layer=experts_read,
        hypothetical=not fits,
        all_to_all_s=None if ex is None else times.all_to_all_s,
    )


def _model_info(model: ModelSpec, terms: _Terms) -> ModelInfo:
    arch = model.arch
    return ModelInfo(
        name=model.name, params=terms.params, active_params=terms.active,
        architecture=None if arch is None else arch.model_type,
        layers=None if arch is None else arch.num_layers,
        hidden_size=None if arch is None else arch.hidden_size,
        kv_cache_kind=None if arch is None else arch.kv_cache_kind,
    )


def _check(arch: Architecture | None, w: InferenceWorkload) -> None:
    """Refuse, at its field, a tensor-parallel degree that does not split the heads and a KV format that is none."""
    reason = valid_tensor_parallel(arch, w.tensor_parallel)
    if reason:
        raise FieldInvalid("gpus", "{reason}", reason=reason)
    if w.kv_format.name not in ("fp32", "fp16", "bf16", "fp8", "int8"):
        raise FieldInvalid("kv_dtype", "{kv_dtype} {name} is not a KV-cache format; use bf16, fp16, fp8 or int8",
                           name=w.kv_format.name)


def estimate(model: ModelSpec, gpu: GpuSpec, workload: InferenceWorkload, *, requested_gpu: str = "",
             system: SystemSpec | None = None, nodes: int = 1, system_assumed: bool = False,
             gpu_alone: bool = False, expert_groups: int = 1, capacity_searches: bool = True,
             ep: int = 1) -> Report:
    """Memory and time of ``workload`` running ``model`` on ``workload.tensor_parallel`` × ``gpu`` (in ``nodes`` ×
    ``system`` when given: the tensor-parallel all-reduces then run over the link the group crosses).
    ``expert_groups`` > 1: these GPUs are one of that many attention groups of an expert-parallel layout, whose
    decode reads the experts its share of the EP group holds (`compute.decode_weight_bytes`; the planner adds
    the all-to-all and the memory, `planning.layouts`). ``capacity_searches=False`` leaves ``max_batch`` and
    ``max_context_tokens`` None (not computed): for a caller that reads only the times and the fit, as the planner's
    search does for each probe (the two searches were ~55 % of a plan's time), and never prints the report.
    ``ep`` > 1: expert parallel over that many GPUs, ``workload.tensor_parallel`` of them per attention group
    (`inference.expert_parallel`: memory, all-to-all and the report's totals over the EP group)."""
    w = workload
    arch = model.arch
    tp = w.tensor_parallel
    _check(arch, w)
    ex = expert_parallel(model, w, ep, system, nodes)
    # under expert parallel each attention group's share of the batch sets its memory and its steps
    wg = w if ex is None else w.model_copy(update={"batch": w.batch // ex.groups})
    gpus = tp if ex is None else ex.gpus
    gpu, system_assumptions, system_warnings = placed(gpu, system, nodes, tp, assumed=system_assumed,
                                                      gpu_alone=gpu_alone)
    dtype, peak = peak_for(gpu, w.weight_format.compute_dtype)
    mem = memory_per_gpu(model, gpu, w, tp, w.batch, w.prompt_tokens, w.output_tokens) if ex is None \
        else ep_memory(model, gpu, w, ex, w.batch)
    required = gpus_required(model, gpu, w, w.batch, w.prompt_tokens, w.output_tokens)
    terms = _terms(model, wg, tp, mem.kv or 0, expert_groups if ex is None else ex.groups, gpus)
    experts_read = None
    if arch is not None and arch.moe is not None:
        experts_read = expected_distinct_experts(arch.moe.num_experts, arch.moe.experts_per_token, wg.batch)
    times = _times(terms, arch, gpu, wg, peak, ex)
    memory = _memory_report(model, gpu, w, terms, mem, required, capacity_searches, ex)
    explain = explain_lines(arch, memory, terms.prefill, terms.decode, times.hw, times.decode, times.prefill, wg, gpu)
    if experts_read is not None and arch is not None and arch.moe is not None:
        e, k = arch.moe.num_experts, arch.moe.experts_per_token
        explain.append(note(NoteCode.MOE_DECODE, experts=e, per_token=k, sequences=wg.batch, experts_read=experts_read))
    more = phase_notes(arch, w.profile, tp, terms.prefill, times.prefill, terms.decode, times.decode)
    if ex is not None:
        ep_assumptions, ep_lines = expert_notes(ex, w, decoding=times.decode is not None)
        more, explain = [*ep_assumptions, *more], explain + ep_lines
    return Report(
        model=_model_info(model, terms),
        gpu=GpuInfo(name=gpu.name, requested_as=requested_gpu or gpu.name, memory_type=gpu.memory_type,
                    memory_bytes=gpu.memory_bytes, memory_gb=gpu.memory_gb,
                    bandwidth_bytes_per_s=gpu.bandwidth_bytes_per_s,
                    peak_flop_per_s=peak, compute_dtype=dtype, system=None if system is None else system.name,
                    nodes=None if system is None else nodes, tdp_w=gpu.tdp_w,
                    power_w=None if gpu.tdp_w is None else gpu.tdp_w * gpus),
        workload=WorkloadInfo(batch=w.batch, prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens,
                              dtype=w.weight_format.name, kv_dtype=w.kv_format.name, gpus=gpus, logits=w.logits,
                              profile=w.profile.name,
                              mla_cache=w.mla_layout if arch is not None and arch.attention.latent else None,
                              expert_parallel=None if ex is None else ex.ep,
                              attention_groups=None if ex is None else ex.groups),
        memory=memory,
        time=_time_report(terms, times, w, experts_read, memory.fits, ex),
        assumptions=(*system_assumptions, *_assumptions(model, gpu, w), *more),
        warnings=(*system_warnings, *_warnings(model, gpu, w, dtype, mem.per_gpu, required), *_capped(model, memory)),
        explain=tuple(explain),
    )


_CAPACITY_NOTES = {
    "override": NoteCode.CAPACITY_OVERRIDE, "unified-share": NoteCode.CAPACITY_UNIFIED,
    "reported": NoteCode.CAPACITY_REPORTED, "installed-gib": NoteCode.CAPACITY_INSTALLED,
    "marketed": NoteCode.CAPACITY_MARKETED,
}


def _capacity_note(gpu: GpuSpec) -> Note:
    """Which figure the usable capacity is (GpuSpec.memory_bytes), as an assumption."""
    if gpu.capacity_source == "unified-share":
        return note(NoteCode.CAPACITY_UNIFIED, capacity_bytes=gpu.memory_bytes, pool_bytes=round(gpu.memory_gb * 1e9))
    return note(_CAPACITY_NOTES[gpu.capacity_source], capacity_bytes=gpu.memory_bytes)
