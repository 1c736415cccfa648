"""The sweep's columnar CSV writer writes the bytes csv.DictWriter writes for the same rows (on the shipped catalog:
the tiny test catalog lacks the MLA and the 405B models)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from estimator.catalog.registry import Catalog
from estimator.inference.workload import InferenceWorkload
from estimator.planning.sweep import SweepResult, sweep
from estimator.render import sweep_csv
from estimator.render.formats import write_csv
from estimator.render.sweep_csv import csv_field, write_sweep_csv

# every kind of field: sizes only (None columns), an encoder, MoE, MLA, sliding windows, TP > 1, no group fits
# (None in gpus_required, negative headroom), context past the model's limit, whole-number and fractional floats
COMBOS = [("llama-3.1-70b", "h100", "bf16", 4, "optimized"), ("gemma-2-9b", "h200", "bf16", 2, "hf"),
          ("70b", "h100", "fp8", 2, "optimized"), ("mixtral-8x7b", "a100", "awq-int4", 2, "optimized"),
          ("bert-base", "t4", "fp16", 1, "optimized"), ("deepseek-v2-lite", "h200", "fp8", 1, "optimized"),
          ("llama-3.1-405b", "l4", "gptq-int4", 8, "hf"),
          ("qwen2.5-7b", "h100", "bf16", 8, "optimized")]  # error rows: 28 heads do not split over 8


def _result(catalog: Catalog, workload: Callable[..., InferenceWorkload]) -> SweepResult:
    items = [(catalog.model(m), catalog.gpus.get(g), workload(dtype=d, kv="fp16" if d == "fp16" else "bf16",
                                                              tensor_parallel=tp, profile=p), g)
             for m, g, d, tp, p in COMBOS]
    return sweep(items, [1, 7, 64, 1000], [1, 1000, 32_768, 200_000], [0, 256, 9000])


def test_columnar_csv_is_byte_identical_to_the_csv_module(shipped_catalog: Catalog,
                                                          workload: Callable[..., InferenceWorkload]) -> None:
    result = _result(shipped_catalog, workload)
    expected = io.StringIO()
    writer = csv.DictWriter(expected, fieldnames=result.keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(result.rows())
    got = io.StringIO()
    write_sweep_csv(result, got)
    assert got.getvalue() == expected.getvalue()
    assert got.getvalue().count("\n") == 1 + 8 * 4 * 4 * 3  # header + 8 combinations × 48 points


def test_a_file_gets_the_same_bytes_in_chunks_of_any_size(shipped_catalog: Catalog, tmp_path: Path,
                                                            workload: Callable[..., InferenceWorkload],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # a real file takes the bytes straight to its buffer; chunk edges that cut blocks anywhere change nothing
    result = _result(shipped_catalog, workload)
    expected = io.StringIO()
    writer = csv.DictWriter(expected, fieldnames=result.keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(result.rows())
    monkeypatch.setattr(sweep_csv, "_CHUNK_ROWS", 7)
    monkeypatch.setattr(sweep_csv, "_LAY_OUT_ROWS", 3)
    path = tmp_path / "sweep.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        write_sweep_csv(result, handle)
        handle.write("after\n")  # text written after the bytes lands after them
    assert path.read_bytes() == expected.getvalue().encode("utf-8") + b"after\n"


def test_write_csv_takes_the_columnar_path_for_a_sweep(shipped_catalog: Catalog,
                                                       workload: Callable[..., InferenceWorkload]) -> None:
    result = _result(shipped_catalog, workload)
    through_rows, columnar = io.StringIO(), io.StringIO()
    write_csv(result.keys, list(result.rows()), through_rows)
    write_csv(result.keys, result, columnar)
    assert columnar.getvalue() == through_rows.getvalue()


@pytest.mark.parametrize(("value", "written"), [(None, ""), (True, "True"), (0.1, "0.1"), (1e16, "1e+16"),
                                                (3.0, "3.0"), ("a,b", '"a,b"'), ('say "hi"', '"say ""hi"""'),
                                                ("", ""), (-12, "-12")])
def test_csv_field_is_what_csv_writes(value: object, written: str) -> None:
    assert csv_field(value) == written


def test_integer_digits_are_what_str_writes() -> None:
    np = pytest.importorskip("numpy")
    edges = [0, 1, -1, 9, 10, 99, 100, 9999, 10_000, 10_001, -10_000, 123_456_789, 2**63 - 1, -(2**63), 10**18]
    rng = np.random.default_rng(14)
    shifted = rng.integers(-(2**63), 2**63 - 1, 5000, dtype=np.int64) >> rng.integers(0, 63, 5000)
    values = np.concatenate([np.array(edges, dtype=np.int64), shifted])
    blank = np.zeros(len(values), dtype=bool)
    blank[1::7] = True  # a blank field (None) is empty
    rows = sweep_csv._integers(np, values, blank)
    assert [bytes(r[r != 0]).decode() for r in rows] == ["" if b else str(v)
                                                         for v, b in zip(values.tolist(), blank, strict=True)]


def test_error_rows_among_estimated_ones_are_the_csv_module_s(shipped_catalog: Catalog, monkeypatch: pytest.MonkeyPatch,
                                                              workload: Callable[..., InferenceWorkload]) -> None:
    # 405B at 10^6 sequences × 10^8 tokens passes 2^50 bytes per GPU: error rows between estimated ones, whose block
    # is cut in parts (chunk edges anywhere)
    m, g = shipped_catalog.model("llama-3.1-405b"), shipped_catalog.gpus.get("h100")
    result = sweep([(m, g, workload(), "h100")], [1, 1_000_000, 2], [1, 100_000_000, 7], [0, 3])
    assert 0 < result.valid < result.size == 18
    expected = io.StringIO()
    writer = csv.DictWriter(expected, fieldnames=result.keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(result.rows())
    for chunk, lay_out in ((32768, 2048), (5, 2)):
        monkeypatch.setattr(sweep_csv, "_CHUNK_ROWS", chunk)
        monkeypatch.setattr(sweep_csv, "_LAY_OUT_ROWS", lay_out)
        got = io.StringIO()
        write_sweep_csv(result, got)
        assert got.getvalue() == expected.getvalue()
