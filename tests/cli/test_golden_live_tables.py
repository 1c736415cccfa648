"""The `monitor`, `calibrate` and `oom` tables are laid out by render/fit.py like every other
table — at 80 columns no cell is cut (no ellipsis), names and processes break between words — with golden files at
80 and 200 columns (tests/data/golden; ``pytest --update-golden`` rewrites them)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from estimator.cli.estimate import report_for_args
from estimator.live.probe import GpuProcess
from estimator.render.live_tables import monitor_table, render_calibration
from tests.cli.test_cli_gpu import h200, snapshot
from tests.cli.test_cli_oom import WORKLOAD
from tests.conftest import CliResult
from tests.live.test_calibration import entry

Cli = Callable[..., CliResult]
WIDTHS = [80, 200]
OOM = Path(__file__).resolve().parent.parent / "data" / "oom"  # a captured OutOfMemoryError
PROCESSES = (GpuProcess(pid=4242, name="/usr/bin/python3 -m vllm.entrypoints.openai.api_server", used_bytes=70 << 30),
             GpuProcess(pid=4343, name="python train.py", used_bytes=5 << 30))


def _drawn(width: int, draw: Callable[[Console], None]) -> str:
    out = io.StringIO()
    draw(Console(file=out, width=width, color_system=None, legacy_windows=False))
    text = out.getvalue()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    return text


@pytest.mark.parametrize("width", WIDTHS)
def test_monitor_table(golden: Callable[[str, str], None], width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESTIMATOR_NO_CALIBRATION", "1")
    expected = report_for_args(["--model", "llama-3.1-8b", "--gpu", "h200", "--batch", "8"])
    reading = snapshot(h200(used=75 << 30, processes=PROCESSES))
    golden(f"monitor-h200-{width}", _drawn(width, lambda c: c.print(monitor_table(reading, expected, "12:00:00",
                                                                                   width))))


@pytest.mark.parametrize("width", WIDTHS)
def test_calibrate_table(golden: Callable[[str, str], None], width: int) -> None:
    path = "/home/someone/.config/estimator/calibration.yaml"
    golden(f"calibrate-h200-{width}", _drawn(width, lambda c: render_calibration(c, entry(), path)))


@pytest.mark.parametrize("width", WIDTHS)
def test_oom_table(cli: Cli, golden: Callable[[str, str], None], width: int) -> None:
    result = cli("oom", "--from", str(OOM / "logits.message.txt"), *WORKLOAD, columns=width)
    assert result.exit_code == 0, result.stderr
    assert "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= width
    golden(f"oom-logits-{width}", result.stdout)
