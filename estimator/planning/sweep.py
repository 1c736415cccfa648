"""Sweeps: evaluate a grid of (batch, prompt, output) points per (model, GPU, dtype, GPU count) at numpy speed.

One `estimate` call per combination gives the row template (every field that does not depend on the grid point)
and validates the combination. Every field that does is the same `estimator.model` function `estimate` calls,
evaluated once on numpy arrays of the whole grid (the terms work on ints and arrays alike), so a sweep row equals
``flatten(estimate(...).model_dump())`` at that point (tests/planning/test_sweep.py checks it; floats agree to
rounding, integers exactly). ``explain`` and ``fixes`` are left out of rows. This module holds no formula: it only
lays the terms' arrays out as estimate's report columns.

Memory is exact int64 arithmetic. A point the model cannot run is a row with its reason in ``error`` and the
rest null (`estimator.planning.sweep_row`), and the rest of the grid goes on: a tensor-parallel degree that does not
split the model's heads (estimate's message), a point whose memory would pass `footprint.SIZE_LIMIT_BYTES`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.specs import GpuSpec
from estimator.errors import FieldInvalid, MissingDependency, WorkloadInvalid
from estimator.inference.estimate import estimate
from estimator.inference.point_fields import memory_point_fields, time_point_fields
from estimator.inference.report import WorkloadInfo
from estimator.inference.workload import MAX_BATCH, MAX_TOKENS, InferenceWorkload
from estimator.model.capacity import fewest_gpus, max_batch, max_context_tokens, within_position_limit
from estimator.model.compute import expected_distinct_experts
from estimator.model.elementwise import as_float, distinct, per_distinct
from estimator.model.footprint import SIZE_LIMIT_BYTES, GpuMemory, memory_per_gpu, peak_kv_layers, within_size_limit
from estimator.model.parallel import valid_tensor_parallel
from estimator.model.phases import job_costs
from estimator.model.timing import Hardware, peak_for, phase_time
from estimator.planning.sweep_notes import warnings_column, warnings_groups
from estimator.planning.sweep_row import IDENTITY, KEYS, LEFT_OUT
from estimator.report import SCHEMA_VERSION, flatten

TOO_BIG = f"a sweep point needs more than 2^{SIZE_LIMIT_BYTES.bit_length() - 1} bytes per GPU; shrink batch or tokens"

ROWS_CHUNK = 32_768  # rows whose fields are Python objects at once in `SweepBlock.rows` (JSON, XLSX)

# numpy int64 arrays of the grid. The terms are annotated for their scalar case (estimator/model/elementwise.py
# says why), so the arrays handed to them are typed Any.
Ints = Any


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise MissingDependency("sweep needs numpy: pip install 'llm-estimator[sweep]'") from None
    return numpy


@dataclass
class SweepBlock:
    """The rows of one (model, GPU, dtype, GPU count) combination: constant fields and per-point columns."""

    constants: dict[str, Any]
    columns: dict[str, Any]  # name -> numpy array with one entry per point (masked where estimate gives None)
    lazy: dict[str, Callable[[int], Any]]  # name -> text of point i, built only when written
    keys: list[str]  # column order: estimate's flattened JSON order
    size: int
    # name -> an array equal at points whose lazy text is equal (the text is then built once per group)
    lazy_groups: dict[str, Any] = field(default_factory=dict)
    # name -> text as parts joined: strings as they are, arrays entry by entry (integers)
    joined: dict[str, list[Any]] = field(default_factory=dict)
    error: str | None = None  # why these points have no estimate (every field but the point's names is None)

    def row(self, i: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in self.keys:
            if key in self.columns:
                value = self.columns[key][i:i + 1].tolist()[0]  # a masked entry (estimate's None) lists as None
                out[key] = value
            elif key in self.lazy:
                out[key] = self.lazy[key](i)
            elif key in self.joined:
                out[key] = "".join(p if isinstance(p, str) else str(p[i]) for p in self.joined[key])
            else:
                out[key] = self.constants[key]
        return out

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every row, fast: columns become Python lists a chunk at a time (memory stays that of the arrays, not of
        a Python object per field), text columns are formatted per row."""
        constant = [(k, self.constants[k]) for k in self.keys if k in self.constants]
        lazy = [(k, self.lazy[k]) for k in self.keys if k in self.lazy]
        lazy += [(k, self._joiner(k)) for k in self.keys if k in self.joined]
        order = self.keys
        for start in range(0, self.size, ROWS_CHUNK):
            stop = min(start + ROWS_CHUNK, self.size)
            varying = [(k, self.columns[k][start:stop].tolist()) for k in self.keys if k in self.columns]
            for i in range(stop - start):
                row = dict(constant)
                for key, values in varying:
                    row[key] = values[i]
                for key, make in lazy:
                    row[key] = make(start + i)
                yield {k: row[k] for k in order}

    def _joiner(self, key: str) -> Callable[[int], str]:
        parts = [p if isinstance(p, str) else p.tolist() for p in self.joined[key]]
        return lambda i: "".join(p if isinstance(p, str) else str(p[i]) for p in parts)

    def part(self, start: int, stop: int) -> SweepBlock:
        """Points start..stop of this block, as a block of their own (views, nothing computed again)."""
        def shifted(make: Callable[[int], Any]) -> Callable[[int], Any]:
            return lambda i: make(start + i)

        return SweepBlock(self.constants, {k: v[start:stop] for k, v in self.columns.items()},
                          {k: shifted(f) for k, f in self.lazy.items()}, self.keys, stop - start,
                          {k: v[start:stop] for k, v in self.lazy_groups.items()},
                          {k: [p if isinstance(p, str) else p[start:stop] for p in parts]
                           for k, parts in self.joined.items()}, self.error)


@dataclass
class SweepResult:
    blocks: list[SweepBlock] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(b.size for b in self.blocks)

    @property
    def keys(self) -> list[str]:
        return self.blocks[0].keys if self.blocks else list(KEYS)

    @property
    def valid(self) -> int:
        """Points with an estimate (rows whose ``error`` is None)."""
        return sum(b.size for b in self.blocks if b.error is None)

    def first_error(self) -> tuple[str, str] | None:
        """The first error row's (model name, error), None when every row has an estimate."""
        block = next((b for b in self.blocks if b.error is not None), None)
        return None if block is None else (str(block.constants["model.name"]), str(block.error))

    def rows(self) -> Iterator[dict[str, Any]]:
        for block in self.blocks:
            yield from block.rows()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.rows()


def _full(np: Any, value: Any, n: int) -> Any:
    """``value`` as an array of ``n`` entries (a term that does not depend on the point is a scalar)."""
    return np.broadcast_to(np.asarray(value), (n,))


def _points(np: Any, batch: Sequence[int] | Ints, prompt: Sequence[int] | Ints,
            output: Sequence[int] | Ints) -> tuple[Ints, Ints, Ints]:
    b, p, o = (np.asarray(x, dtype=np.int64) for x in (batch, prompt, output))
    n = len(b)
    if not (len(p) == n == len(o)) or n == 0:
        raise WorkloadInvalid("sweep needs equally long, non-empty batch, prompt and output arrays")
    for name, arr, low, high in (("batch", b, 1, MAX_BATCH), ("prompt_tokens", p, 1, MAX_TOKENS),
                                 ("output_tokens", o, 0, MAX_TOKENS)):
        if int(arr.min()) < low or int(arr.max()) > high:  # located at the request's field of that axis
            raise FieldInvalid(name, "sweep {" + name + "} must lie in [{low}, {high}]", low=f"{low:,}",
                               high=f"{high:,}")
    return b, p, o


def sweep_blocks(model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, batch: Sequence[int] | Ints,
                 prompt: Sequence[int] | Ints, output: Sequence[int] | Ints, *,
                 requested_gpu: str = "") -> list[SweepBlock]:
    """Every point (batch[i], prompt[i], output[i]) for one combination (``w`` gives everything else), in order:
    blocks of estimated points and blocks of points without an estimate (``error`` says why)."""
    np = _numpy()
    b, p, o = _points(np, batch, prompt, output)
    reason = valid_tensor_parallel(model.arch, w.tensor_parallel)  # estimate's own refusal, for every point
    if reason:
        return [error_block(model, gpu, w, b, p, o, reason, requested_gpu)]
    valid = np.asarray(within_size_limit(model, gpu, w, w.tensor_parallel, b, p, o), dtype=bool)
    if valid.all():
        return [sweep_block(model, gpu, w, b, p, o, requested_gpu=requested_gpu)]
    if not valid.any():
        return [error_block(model, gpu, w, b, p, o, TOO_BIG, requested_gpu)]
    keep = np.flatnonzero(valid)
    estimated = sweep_block(model, gpu, w, b[keep], p[keep], o[keep], requested_gpu=requested_gpu)
    edges = np.flatnonzero(np.diff(valid.astype(np.int8))) + 1  # where a run of equal validity starts
    blocks, done = [], 0  # done: estimated points handed out so far
    for start, stop in zip([0, *edges.tolist()], [*edges.tolist(), len(b)], strict=True):
        if valid[start]:
            blocks.append(estimated.part(done, done + stop - start))
            done += stop - start
        else:
            blocks.append(error_block(model, gpu, w, b[start:stop], p[start:stop], o[start:stop], TOO_BIG,
                                      requested_gpu))
    return blocks


def error_block(model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, b: Ints, p: Ints, o: Ints, error: str,
                requested_gpu: str = "") -> SweepBlock:
    """Points without an estimate: the fields that name them (`sweep_row.IDENTITY`), ``error``, the rest None."""
    arch = model.arch
    workload = WorkloadInfo(batch=int(b[0]), prompt_tokens=int(p[0]), output_tokens=int(o[0]),
                            dtype=w.weight_format.name, kv_dtype=w.kv_format.name, gpus=w.tensor_parallel,
                            logits=w.logits, profile=w.profile.name,
                            mla_cache=w.mla_layout if arch is not None and arch.attention.latent else None)
    named = flatten({"schema_version": SCHEMA_VERSION, "model": {"name": model.name},
                     "gpu": {"name": gpu.name, "requested_as": requested_gpu or gpu.name},
                     "workload": workload.model_dump(mode="json")})
    columns = report_columns(_numpy(), "workload", {"batch": b, "prompt_tokens": p, "output_tokens": o}, len(b))
    constants = {k: named[k] if k in IDENTITY else None for k in KEYS if k not in columns}
    constants["error"] = error
    return SweepBlock(constants, columns, {}, list(KEYS), len(b), error=error)


def sweep_block(model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, b: Ints, p: Ints, o: Ints, *,
                requested_gpu: str = "") -> SweepBlock:
    """Evaluate every point (b[i], p[i], o[i]) of one combination, every one valid (`sweep_blocks` checks)."""
    np = _numpy()
    template = estimate(model, gpu, _point(w, b, p, o, 0), requested_gpu=requested_gpu)
    flat = flatten(template.model_dump(mode="json"))
    for key in LEFT_OUT:  # sweep_row.LEFT_OUT: explain, fixes
        flat.pop(key)
    flat["error"] = None
    mem = memory_per_gpu(model, gpu, w, w.tensor_parallel, b, p, o)
    memory = _memory_fields(np, model, gpu, w, mem, b, p, o)
    fits, required, headroom = memory["fits"], memory["gpus_required"], memory["headroom_bytes"]
    by_memory = memory.get("max_context_tokens_by_memory")
    memory["gpus_required"] = np.ma.masked_equal(required, 0)  # estimate's None: no group fits
    time = {**_time_fields(np, model, gpu, w, mem, b, p, o), "hypothetical": np.logical_not(fits)}
    n = len(b)
    cols = {**report_columns(np, "workload", {"batch": b, "prompt_tokens": p, "output_tokens": o}, n),
            **report_columns(np, "memory", memory, n), **report_columns(np, "time", time, n)}
    lazy = {"warnings": warnings_column(template.warnings, gpu, model, w, p, o, fits, required, by_memory, headroom)}
    if words_point_figures(w.profile):
        lazy["assumptions"] = _assumptions_column(model, gpu, w, b, p, o, requested_gpu)
    groups = {"warnings": warnings_groups(model, p, o, fits, required, by_memory, headroom, gpu.memory_bytes)}
    joined = {}
    if model.arch is not None and model.arch.causal:
        joined[_path("memory", "kv_by_window")] = _kv_by_window(model, w, b, p, o)
    constants = {k: v for k, v in flat.items() if k not in cols and k not in lazy and k not in joined}
    return SweepBlock(constants, cols, lazy, list(flat), len(b), groups, joined)


def _point(w: InferenceWorkload, b: Ints, p: Ints, o: Ints, i: int) -> InferenceWorkload:
    """The workload of point i of a block."""
    return w.model_copy(update={"batch": int(b[i]), "prompt_tokens": int(p[i]), "output_tokens": int(o[i])})


def words_point_figures(profile: EfficiencyProfile) -> bool:
    """Whether the profile's assumptions carry figures of the point (the prefill's GEMM kernels and strided elements,
    a host-bound phase's counted operations): then each row's are its own estimate's, not the block's first point's."""
    return (profile.gemm is not None or profile.fp32_gemm is not None or bool(profile.host_per_op_s)
            or bool(profile.gpu_per_op_s))


def _assumptions_column(model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, b: Ints, p: Ints, o: Ints,
                        requested_gpu: str) -> Callable[[int], str]:
    """Point i's assumptions as estimate words them (built only when written: one estimate a row)."""
    def assumptions(i: int) -> str:
        report = estimate(model, gpu, _point(w, b, p, o, i), requested_gpu=requested_gpu)
        return str(flatten({"assumptions": report.model_dump(mode="json")["assumptions"]})["assumptions"])
    return assumptions


def _path(section: str, name: str) -> str:
    """The flattened key of the Report's field ``name`` in ``section`` (a row's column), checked against the
    Report's own fields (`sweep_row.KEYS`)."""
    key = f"{section}.{name}"
    if key not in KEYS:
        raise AssertionError(f"{key} is no field of the flattened Report (sweep_row.KEYS)")
    return key


def report_columns(np: Any, section: str, fields: dict[str, Any], n: int) -> dict[str, Any]:
    """The Report's ``section`` fields ``fields`` (by field name, as estimate fills them) as columns of ``n``
    points named by their flattened path; a None field keeps the template's value (a model known by its size)."""
    return {_path(section, name): value if isinstance(value, np.ndarray) and value.shape == (n,) else
            _full(np, value, n) for name, value in fields.items() if value is not None}


def _memory_fields(np: Any, model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, mem: GpuMemory, b: Ints,
                   p: Ints, o: Ints) -> dict[str, Any]:
    """estimate's memory fields at every point, by MemoryReport field name: `footprint.memory_per_gpu` as estimate
    reports it (`memory_point_fields`) and the `capacity` searches."""
    tp, n = w.tensor_parallel, len(b)
    fields = {**memory_point_fields(mem, tp, gpu.memory_bytes), "gpus_required": fewest_gpus(model, gpu, w, b, p, o)}
    fields = {k: None if v is None else _full(np, v, n) for k, v in fields.items()}
    if model.arch is not None:  # one search per distinct (prompt, output) and (batch, output) pair
        (up, uo), back = _distinct(p, o)
        fields["max_batch"] = np.asarray(max_batch(model, gpu, w, tp, up, uo))[back]
        (ub, uo), back = _distinct(b, o)
        by_memory = np.asarray(max_context_tokens(model, gpu, w, tp, ub, uo))[back]
        fields["max_context_tokens_by_memory"] = by_memory
        fields["max_context_tokens"] = np.asarray(within_position_limit(model, by_memory))
    return fields


def _distinct(a: Ints, b: Ints) -> tuple[list[Ints], Ints]:
    """Distinct (a, b) pairs and the index of each point's pair."""
    (ua, ia), (ub, ib) = distinct(a), distinct(b)
    keys, inverse = distinct(ia * len(ub) + ib)
    return [ua[keys // len(ub)], ub[keys % len(ub)]], inverse


def _time_fields(np: Any, model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, mem: GpuMemory, b: Ints, p: Ints,
                 o: Ints) -> dict[str, Any]:
    """estimate's time fields at every point, by TimeReport field name: `phases.job_costs` and `timing.phase_time`
    on float64 arrays, as estimate reports them (`time_point_fields`)."""
    tp, arch = w.tensor_parallel, model.arch
    _, peak = peak_for(gpu, w.weight_format.compute_dtype)
    hw = Hardware(peak, gpu.bandwidth_bytes_per_s, gpu.memory_type, gpu.interconnect_bytes_per_s, tp,
                  gpu.peak_flop_per_s("fp32"))
    bf = as_float(b)
    costs = job_costs(model, w, tp, bf, as_float(p), as_float(o), as_float(0 * b if mem.kv is None else mem.kv))
    decoding = arch is None or arch.causal
    decode = phase_time(costs.decode, hw, w.profile) if decoding else None
    step = phase_time(costs.step, hw, w.profile) if decoding else None
    fields = time_point_fields(costs.prefill, costs.decode, phase_time(costs.prefill, hw, w.profile), decode, step,
                               bf, tp)
    if arch is not None and arch.moe is not None:
        moe = arch.moe
        fields["experts_read_per_layer"] = per_distinct(
            lambda x: expected_distinct_experts(moe.num_experts, moe.experts_per_token, x), b)
    return fields


def _kv_by_window(model: ModelSpec, w: InferenceWorkload, b: Ints, p: Ints, o: Ints) -> list[Any]:
    """estimate's ``memory.kv_by_window`` JSON at every point, as parts (`footprint.peak_kv_layers` of the grid)."""
    assert model.arch is not None
    tp = w.tensor_parallel
    parts: list[Any] = []
    for g in peak_kv_layers(model.arch, w, tp, b, p, o):
        parts += [f'{"," if parts else "["}{{"window":{json.dumps(g.window)},"layers":{g.layers},"tokens":', g.tokens,
                  ',"bytes":', g.bytes, ',"total_bytes":', g.bytes * tp, "}"]
    return [*parts, "]"]


def sweep(items: Sequence[tuple[ModelSpec, GpuSpec, InferenceWorkload, str]], batches: Sequence[int],
          prompts: Sequence[int], outputs: Sequence[int], *,
          progress: Callable[[int], None] | None = None) -> SweepResult:
    """The full grid batches × prompts × outputs for every (model, gpu, workload, requested name) item."""
    np = _numpy()
    grid_b, grid_p, grid_o = (a.reshape(-1) for a in np.meshgrid(np.asarray(batches, dtype=np.int64),
                                                                 np.asarray(prompts, dtype=np.int64),
                                                                 np.asarray(outputs, dtype=np.int64),
                                                                 indexing="ij"))
    result = SweepResult()
    for model, gpu, w, name in items:
        result.blocks += sweep_blocks(model, gpu, w, grid_b, grid_p, grid_o, requested_gpu=name)
        if progress is not None:
            progress(len(grid_b))
    return result
