"""Notes are typed records: a code and its values, worded late in the units the reader chose."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from pydantic import ValidationError

from estimator.catalog.registry import Catalog
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload
from estimator.notes import _SPECS, NoteCode, note, word
from estimator.report import flatten
from tests.conftest import CliResult


def test_every_code_has_values_and_a_wording() -> None:
    assert set(_SPECS) == set(NoteCode)


def test_values_must_match_the_code() -> None:
    with pytest.raises(ValidationError, match="takes \\['gpu', 'gpus', 'required'\\]"):
        note(NoteCode.NEEDS_MORE_GPUS, gpus=1, gpu="A100")
    with pytest.raises(ValidationError, match="wrong type for required"):
        note(NoteCode.NEEDS_MORE_GPUS, gpus=1, gpu="A100", required="2")
    with pytest.raises(ValidationError, match="wrong type for fits"):
        note(NoteCode.OOM_ESTIMATE, per_gpu_bytes=1, capacity_bytes=2, fits=1, largest_term="kv", largest_term_bytes=1)


def test_bytes_are_worded_in_the_chosen_units() -> None:
    weights = note(NoteCode.WEIGHTS_PART, role="all", params=70_000_000_000, bits=16.0, bytes=140_000_000_000)
    assert word(weights, binary=False) == "weights[all]: 70,000,000,000 params × 16 bits ÷ 8 = 140.0 GB"
    # 140e9 B ÷ 2³⁰ = 130.385… GiB
    assert word(weights, binary=True) == "weights[all]: 70,000,000,000 params × 16 bits ÷ 8 = 130.4 GiB"
    # the device reports MiB: the reported capacity is GiB in both unit systems
    capacity = note(NoteCode.CAPACITY_REPORTED, capacity_bytes=81_920 * 2**20)
    assert word(capacity, binary=False) == word(capacity, binary=True) == (
        "capacity is what the device reports: 80.0 GiB per GPU")


def test_json_keeps_code_values_and_decimal_text() -> None:
    item = note(NoteCode.TRAIN_DOES_NOT_FIT, per_gpu_bytes=1_400_000_000_000, capacity_bytes=85_899_345_920)
    assert item.model_dump(mode="json") == {
        "code": "train-does-not-fit",
        "values": {"per_gpu_bytes": 1_400_000_000_000, "capacity_bytes": 85_899_345_920},
        "text": "does not fit: needs 1.4 TB per GPU of 85.9 GB",
    }
    assert word(item, binary=True) == "does not fit: needs 1.3 TiB per GPU of 80.0 GiB"  # 1.4e12 / 2⁴⁰ = 1.273


def test_flatten_joins_note_texts(catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    report = estimate(catalog.model("70b"), catalog.gpus.get("a100"), make_workload(), requested_gpu="a100")
    assert report.warnings[0].model_dump(mode="json") == {
        "code": "needs-more-gpus", "values": {"gpus": 1, "gpu": "NVIDIA A100 SXM4 80GB", "required": 2},
        "text": "does not fit on 1 × NVIDIA A100 SXM4 80GB: needs 2"}
    row = flatten(report.model_dump(mode="json"))
    assert row["warnings"] == "; ".join(w.text for w in report.warnings)
    assert row["warnings"].startswith("does not fit on 1 × NVIDIA A100 SXM4 80GB: needs 2; times and tokens/s are "
                                      "hypothetical")


def test_units_gib_reaches_the_notes(cli: Callable[..., CliResult]) -> None:
    args = ("--model", "70b", "--gpu", "a100", "--explain")
    decimal = cli(*args, entry="estimate").stdout
    binary = cli(*args, "--units", "gib", entry="estimate").stdout
    # 140e9 B = 140.0 GB = 130.4 GiB; 2,039 GB/s stays decimal, as the datasheet states it
    assert "weights[all]: 70,000,000,000 params × 16 bits ÷ 8 = 140.0 GB" in decimal
    assert "weights[all]: 70,000,000,000 params × 16 bits ÷ 8 = 130.4 GiB" in binary
    assert "decode bound: 130.4 GiB ÷ 2,039 GB/s = 68.7 ms per token" in binary
    assert " GB " not in binary.split("Arithmetic")[1].split("Assumptions")[0].replace("GB/s", "")


def test_training_warning_in_gib(cli: Callable[..., CliResult]) -> None:
    args = ("estimate", "--mode", "train", "--model", "llama-3.1-70b", "--gpu", "a100")
    json_out = json.loads(cli(*args, "--format", "json").stdout)
    fit = [w for w in json_out["warnings"] if w["code"] == "train-does-not-fit"]
    assert len(fit) == 1 and fit[0]["values"]["capacity_bytes"] == 81_920 * 2**20  # 80 GiB reported
    table = cli(*args, "--units", "gib").stdout
    assert "of 80.0 GiB" in table and "of 85.9 GB" not in table
