"""Predicted vs measured on the committed H200 measurements, and the accuracy document's reproducibility."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.registry import Catalog
from estimator.live.validation import Point, Predictor, points, summarize

ROOT = Path(__file__).resolve().parents[2]
MEASURED = ROOT / "tests" / "data" / "measured" / "h200-2026-11-30.jsonl"


def rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in MEASURED.read_text().splitlines()]


@pytest.fixture(scope="module")
def measured_points(shipped_catalog: Catalog) -> list[Point]:
    """Every measured family, so the shipped catalog (the tiny one lacks most of them)."""
    return list(points(rows(), Predictor.default(shipped_catalog, shipped_catalog.gpus.get("h200"))))


def test_weights_are_exact_on_every_model(measured_points: list[Point]) -> None:
    weights = [p for p in measured_points if p.term == "weights_bytes"]
    assert len(weights) >= 10
    assert all(p.predicted == p.measured for p in weights)


def test_bounds_never_exceed_a_measured_time(measured_points: list[Point]) -> None:
    bounds = [p for p in measured_points if p.kind == "bound"]
    assert len(bounds) > 50
    assert all(p.ok for p in bounds)


def test_point_error_and_target() -> None:
    p = Point("m", "c", "kv_cache_bytes", 101.0, 100.0)
    assert p.error == pytest.approx(0.01)
    assert p.target == 0.01
    assert p.ok is True
    assert Point("m", "c", "decode_step_s hf", 2.0, 1.0).ok is None  # no target
    assert Point("m", "c", "decode bound", 2.0, 1.0, "bound").ok is False
    assert Point("m", "c", "x", 1.0, 0.0).error == float("inf")
    assert set(p.as_dict()) >= {"error", "target", "ok"}
    # a zero measurement has no relative error: the report says null, since JSON has no infinity
    assert Point("m", "c", "x", 1.0, 0.0).record().error is None
    assert json.loads(json.dumps(Point("m", "c", "x", 1.0, 0.0).as_dict()))["error"] is None


def test_summary_counts(measured_points: list[Point]) -> None:
    by_term = {s.term: s for s in summarize(measured_points)}
    assert by_term["weights_bytes"].within == by_term["weights_bytes"].cases
    assert by_term["decode bound"].median_abs_error is None


def test_failed_rows_are_skipped(catalog: Catalog) -> None:
    failed = [{"kind": "model", "model": "llama-3.2-1b", "phase": "prefill", "error": "OutOfMemoryError"}]
    assert list(points(failed, Predictor.default(catalog, catalog.gpus.get("h200")))) == []


@pytest.mark.lab
def test_accuracy_doc_is_reproducible(tmp_path: Path) -> None:
    """docs/accuracy.md is what lab/accuracy/report.py writes from the committed rows (about a minute: lab-only)."""
    out = tmp_path / "accuracy.md"
    subprocess.run([sys.executable, "-m", "lab.accuracy.report", "--out", str(out)],
                   check=True, capture_output=True, cwd=ROOT)
    assert out.read_text() == (ROOT / "docs" / "accuracy.md").read_text()


@pytest.mark.hf
# transformers deprecates its cache arguments release by release (the device runs 5.17, CI the newest); the
# measurement code keeps the spelling the device understands, so those warnings are not errors here.
@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning", "ignore::UserWarning")
def test_measurement_code_paths_on_cpu(tmp_path: Path) -> None:
    """The torch measurements on a toy Llama on the CPU (memory reads 0 there; this checks the code paths)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from estimator.live import measure

    measure.dry_run_on_cpu()
    try:
        _run_tiny(measure)
    finally:
        measure._STATE["device"] = "cuda"  # leave the module as other tests expect it


def _run_tiny(measure: Any) -> None:
    tiny = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 256,
            "tie_word_embeddings": True, "max_position_embeddings": 64}
    got = measure.inference_rows("tiny", tiny, prefill=[(1, 16), (1, 128)], decode=[(2, 24)], lean=[(2, 24)])
    assert [r.get("phase", r["kind"]) for r in got] == ["load", "prefill", "prefill", "decode", "lean_decode",
                                                        "lean_decode"]  # the 128-token case exceeds 64 positions
    assert not [r for r in got if r.get("error")]
    train = measure.measure_train(tiny, mode="bf16", batch=1, seq=16, checkpointing=True)
    assert train["kind"] == "train"
    assert set(train["steady"]) == {"after_forward", "after_backward", "after_step"}
