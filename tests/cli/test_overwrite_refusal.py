"""Fuzz-campaign class 'every output overwrites without asking': an existing output file is replaced only with
--force, and the refusal is one line before any work (stdout empty, the old file untouched). --force is one
option (defined once in estimator/request/options.py) in every command that writes; calibrate keeps other cards'
entries and refuses only to replace this card's entry or a file that is no calibration file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from estimator.errors import FieldInvalid, SpecInvalid
from estimator.live.calibration import (
    GpuCalibration,
    check_calibration_target,
    load_calibration,
    save_calibration,
)
from estimator.request.options import flag_of
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
ESTIMATE = ("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--format", "json")
TRAIN = ("estimate", "--mode", "train", "--model", "llama-3.2-1b", "--gpu", "h100", "--format", "json")
PLAN = ("plan", "--model", "llama-3.1-8b", "--concurrency", "8", "--gpu", "h100", "--format", "json")
SWEEP = ("sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "1,8", "--format", "csv")


def _refused(result: CliResult, target: Path) -> None:
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"error: {target} exists: pass --force to replace it\n"
    assert target.read_text() == "earlier work\n"


@pytest.mark.parametrize("args", [ESTIMATE, TRAIN, PLAN, SWEEP], ids=["estimate", "train", "plan", "sweep"])
def test_an_existing_output_is_refused_without_force(cli: Cli, tmp_path: Path, args: tuple[str, ...]) -> None:
    target = tmp_path / "out.txt"
    target.write_text("earlier work\n")
    _refused(cli(*args, "-o", str(target)), target)
    _refused(cli(*args, "--output", str(target)), target)


@pytest.mark.parametrize("where", ["before", "after"])
def test_force_replaces_the_output_wherever_it_stands(cli: Cli, tmp_path: Path, where: str) -> None:
    target = tmp_path / "report.json"
    target.write_text("earlier work\n")
    args = ("--force", "-o", str(target)) if where == "before" else ("-o", str(target), "--force")
    result = cli(*ESTIMATE, *args)
    assert result.exit_code == 0, result.stderr
    assert json.loads(target.read_text())["model"]["name"] == "llama-3.1-8b"


def test_an_existing_plot_is_refused_without_force(cli: Cli, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    chart = tmp_path / "chart.png"
    chart.write_text("earlier work\n")
    _refused(cli(*ESTIMATE, "--plot", str(chart)), chart)
    assert cli(*ESTIMATE, "--plot", str(chart), "--force").exit_code == 0
    assert chart.read_bytes()[:4] == b"\x89PNG"


def test_a_new_file_needs_no_force(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "grid.csv"
    assert cli(*SWEEP, "-o", str(target)).exit_code == 0
    assert target.read_text().startswith("schema_version,model.name,")


def test_force_is_one_option_in_every_writing_command(cli: Cli) -> None:
    for command in ("estimate", "plan", "sweep", "calibrate"):
        assert "--force" in cli(command, "--help", columns=200).stdout, command


def _card(name: str = "NVIDIA H200") -> GpuCalibration:
    return GpuCalibration(gpu=name, catalog_gpu=None, measured_at="2026-11-30", memory_total_bytes=1,
                          copy_bytes_per_s=1.0, read_bytes_per_s=1.0, gemv_bytes_per_s=1.0, matmul_flop_per_s={},
                          driver_reserved_bytes=0, cuda_context_bytes=0, workspace_bytes=0, graph_kernel_s=0.0,
                          graph_layer_s=0.0, graph_bandwidth_bytes_per_s=1.0, profile_overrides={})


def test_calibrate_adds_a_card_but_refuses_to_replace_one_without_force(tmp_path: Path) -> None:
    path = tmp_path / "calibration.yaml"
    check_calibration_target(path, "NVIDIA H200", force=False)  # no file yet
    save_calibration(path, _card())
    check_calibration_target(path, "NVIDIA L4", force=False)  # another card: the file holds every card
    with pytest.raises(FieldInvalid, match=r"holds a calibration of NVIDIA H200 \(measured 2026-11-30\): pass "
                                           "force to replace it") as caught:
        check_calibration_target(path, "NVIDIA H200", force=False)
    assert caught.value.worded(flag_of).endswith(": pass --force to replace it")  # as the command line says it
    check_calibration_target(path, "NVIDIA H200", force=True)


def test_calibrate_refuses_a_file_that_is_no_calibration_without_force(tmp_path: Path) -> None:
    path = tmp_path / "calibration.yaml"
    path.write_text("my notes: [\n")
    with pytest.raises(FieldInvalid, match=r"malformed YAML.*pass force to replace the file") as caught:
        check_calibration_target(path, "NVIDIA H200", force=False)
    assert caught.value.worded(flag_of).endswith(": pass --force to replace the file")
    with pytest.raises(SpecInvalid, match="malformed YAML"):
        save_calibration(path, _card())
    assert path.read_text() == "my notes: [\n"
    save_calibration(path, _card(), force=True)
    assert set(load_calibration(path).gpus) == {"NVIDIA H200"}
    assert [p.name for p in tmp_path.iterdir()] == ["calibration.yaml"]  # no temporary left beside it


def test_calibrate_out_in_a_missing_folder_is_refused_before_measuring(cli: Cli, tmp_path: Path) -> None:
    result = cli("calibrate", "--out", str(tmp_path / "missing" / "cal.yaml"))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == f"error: cannot write {tmp_path / 'missing' / 'cal.yaml'}: folder {tmp_path / 'missing'} " \
                            "does not exist\n"


def test_the_http_api_takes_no_force(tmp_path: Path) -> None:
    """`estimator serve` writes no file: --force is no request field, and a request naming it is refused."""
    from estimator.serve.fields import RequestInvalid, fields_of, parse

    for name in ("estimate", "plan", "sweep"):
        fields = fields_of(name)
        assert "force" not in fields and "output" not in fields
    with pytest.raises(RequestInvalid, match="'force' is not a field of estimate"):
        parse("estimate", [("model", "llama-3.1-8b"), ("gpu", "h100"), ("force", "true")])


def test_validate_save_into_a_file_of_no_rows_is_refused_before_measuring(cli: Cli, tmp_path: Path) -> None:
    # validate --save appends; a file that holds no measured rows (a typo for another file) is not appended to
    target = tmp_path / "notes.txt"
    target.write_text("earlier work\n")
    result = cli("validate", "--model", "llama-3.2-1b", "--save", str(target))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"error: {target} is not a file of measured rows (JSON lines): pass --force to replace it\n"
    assert target.read_text() == "earlier work\n"
    missing = tmp_path / "no-such-folder" / "rows.jsonl"
    result = cli("validate", "--model", "llama-3.2-1b", "--save", str(missing))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: cannot write {missing}: folder")


def test_validate_save_appends_rows_atomically(tmp_path: Path) -> None:
    from estimator.render.output import append_lines, check_rows_target

    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"case": 1}\n')
    check_rows_target(rows)  # an earlier --save's file is appended to without --force
    append_lines(rows, ['{"case": 2}\n'])
    assert rows.read_text() == '{"case": 1}\n{"case": 2}\n'
    append_lines(rows, ['{"case": 3}\n'], replace=True)  # --force
    assert rows.read_text() == '{"case": 3}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl"]  # no temporary left beside it
