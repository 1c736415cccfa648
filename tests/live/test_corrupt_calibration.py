"""Fuzz-campaign class 'a corrupt calibration file breaks every estimate for every GPU': the user calibration
file, picked up without being named, is reported in one warning line and ignored, whatever is wrong with it —
garbage, a list, NaN, a write cut short, an entry the file schema takes but the profile refuses — and every
estimate, on every card, is the uncalibrated one."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

from estimator.cli.main import main
from tests.live.test_calibration import entry

GPUS = ("h100", "h200", "rtx-4090")
ESTIMATE = ("estimate", "--model", "llama-3.1-8b", "--batch", "2", "--format", "json")
_GOOD = entry().model_dump(mode="json")
CORRUPT = {
    "garbage": b"\x00\xff not yaml: [\n",
    "a list": b"- NVIDIA H200\n- 4.8e12\n",
    "empty": b"",
    "nan": json.dumps({"gpus": {"NVIDIA H200": {**_GOOD, "copy_bytes_per_s": "NaN"}}}).replace('"NaN"', ".nan")
    .encode(),
    "nan override": json.dumps({"gpus": {"NVIDIA H200": {**_GOOD, "profile_overrides": {"bandwidth_efficiency": 0}}}})
    .replace(": 0}", ": .nan}").encode(),
    "truncated": json.dumps({"gpus": {"NVIDIA H200": _GOOD}}).encode()[:200],
    "override out of range": json.dumps({"gpus": {"NVIDIA H200": {**_GOOD, "profile_overrides":
                                                                  {"bandwidth_efficiency": 7.0}}}}).encode(),
}


def _estimate(gpu: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "argv", ["estimator", *ESTIMATE, "--gpu", gpu])
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main()
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("kind", sorted(CORRUPT))
def test_a_corrupt_calibration_file_is_reported_once_and_ignored_on_every_card(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ESTIMATOR_NO_CALIBRATION", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))  # no user file: the uncalibrated figures
    plain = {gpu: _estimate(gpu, monkeypatch) for gpu in GPUS}
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    user = tmp_path / "estimator" / "calibration.yaml"
    user.parent.mkdir(parents=True)
    user.write_bytes(CORRUPT[kind])
    for gpu in GPUS:
        code, stdout, stderr = _estimate(gpu, monkeypatch)
        assert code == 0, stderr
        assert stdout == plain[gpu][1]  # byte for byte the uncalibrated report
        if kind == "override out of range" and gpu != "h200":
            assert stderr == ""  # the file is sound; only the H200 entry is refused, where it would apply
            continue
        assert stderr.count("\n") == 1
        assert stderr.startswith(f"warning: ignoring the calibration file: {user}: ")
    assert user.read_bytes() == CORRUPT[kind]  # reading never rewrites the user's file
