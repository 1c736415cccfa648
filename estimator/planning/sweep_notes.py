"""The ``warnings`` column of a sweep: estimate's warnings at each point, without building a Report per row."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.inference.estimate import low_headroom
from estimator.inference.workload import InferenceWorkload
from estimator.notes import Note, NoteCode, word_values

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Ints = npt.NDArray[np.int64]

_PER_POINT = (NoteCode.NO_FITTING_GROUP, NoteCode.NEEDS_MORE_GPUS, NoteCode.TIME_HYPOTHETICAL,
              NoteCode.LOW_HEADROOM, NoteCode.CONTEXT_TOO_LONG, NoteCode.CONTEXT_LIMIT)


def warnings_column(template_warnings: Sequence[Note], gpu: GpuSpec, model: ModelSpec, w: InferenceWorkload,
                    p: Ints, o: Ints, fits: Any, required: Ints, by_memory: Ints | None = None,
                    headroom: Ints | None = None) -> Callable[[int], str]:
    """Warnings of point i, built only when written (estimate's, in its order: the point's own warnings selected
    by code and worded as estimate's JSON words them); ``required`` is 0 where no tensor-parallel group fits."""
    tp, arch = w.tensor_parallel, model.arch
    fallback = [x.text for x in template_warnings if x.code is NoteCode.COMPUTE_FALLBACK]
    rest = [x.text for x in template_warnings if x.code not in (*_PER_POINT, NoteCode.COMPUTE_FALLBACK)]
    limit = None if arch is None else arch.max_position_embeddings

    def warnings(i: int) -> str:
        out = list(fallback)
        if required[i] == 0:
            out.append(word_values(NoteCode.NO_FITTING_GROUP, {"gpu": gpu.name}, binary=False))
        elif not fits[i]:
            out.append(word_values(NoteCode.NEEDS_MORE_GPUS, {"gpus": tp, "gpu": gpu.name,
                                                              "required": int(required[i])}, binary=False))
        if not fits[i]:
            out.append(word_values(NoteCode.TIME_HYPOTHETICAL, {}, binary=False))
        elif headroom is not None and low_headroom(int(headroom[i]), gpu.memory_bytes):
            out.append(word_values(NoteCode.LOW_HEADROOM, {"headroom_bytes": int(headroom[i]),
                                                           "capacity_bytes": gpu.memory_bytes}, binary=False))
        out += rest
        context = int(p[i] + o[i])
        if limit and context > limit:
            out.append(word_values(NoteCode.CONTEXT_TOO_LONG, {"tokens": context, "limit": limit}, binary=False))
        if limit and by_memory is not None and by_memory[i] > limit:
            out.append(word_values(NoteCode.CONTEXT_LIMIT, {"limit": limit, "tokens": int(by_memory[i])},
                                   binary=False))
        return "; ".join(out)

    return warnings


def warnings_groups(model: ModelSpec, p: Ints, o: Ints, fits: Any, required: Ints,
                    by_memory: Ints | None = None, headroom: Ints | None = None, capacity: int = 0) -> Ints:
    """An array equal at points whose warnings are equal: `warnings_column` reads only ``required``, ``fits``,
    the context beyond the model's limit, the memory-only context where the limit caps it, and the headroom where
    it is low."""
    limit = None if model.arch is None else model.arch.max_position_embeddings
    context = p + o
    beyond = context * (context > limit) if limit else 0 * context
    key = (beyond * 4096 + required) * 2 + fits
    if limit and by_memory is not None:
        key = _combined(key, by_memory * (by_memory > limit))
    if headroom is not None:
        low = (headroom >= 0) & (10 * headroom < capacity)
        key = _combined(key, headroom * low)
    return key  # type: ignore[no-any-return]


def _combined(a: Ints, b: Ints) -> Ints:
    """A label per point, equal exactly where both ``a`` and ``b`` are equal."""
    (ia, _), (ib, nb) = _labels(a), _labels(b)
    return ia * nb + ib


_FEW = 8  # distinct values found by comparison before sorting


def _labels(values: Ints) -> tuple[Ints, int]:
    """(a label per entry, equal exactly where the values are equal, and how many labels there are). A few
    distinct values (a sweep's capped context, its low headrooms, which most points share as 0) are found by
    comparing, one pass each; more by `elementwise.distinct` (a sort where the values are sparse)."""
    import numpy as np

    from estimator.model.elementwise import distinct

    label = np.zeros(len(values), dtype=np.int64)
    todo = np.arange(len(values))
    for found in range(_FEW):
        if not len(todo):
            return label, found
        rest = values[todo]
        same = rest == rest[0]
        label[todo[same]] = found
        todo = todo[~same]
    if not len(todo):
        return label, _FEW
    unique, index = distinct(values[todo])
    label[todo] = _FEW + index
    return label, _FEW + len(unique)
