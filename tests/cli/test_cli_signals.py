"""SIGTERM and SIGHUP end a command as Ctrl-C does: an ``-o`` file being written leaves no temporary behind and no
target, one line on stderr, and the exit status is 128 + the signal's number (the shell's convention)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from estimator.cli.process import Terminated, signals_end_like_interrupts

ROOT = Path(__file__).resolve().parents[2]
# 40,000 points (about 80 MB of CSV): its rows are computed while the file is written, so the temporary exists for
# many seconds, far longer than the poll below takes to see it.
SWEEP = ["sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", ",".join(str(b) for b in range(1, 201)),
         "--prompt-tokens", ",".join(str(t) for t in range(100, 20_001, 100)), "--format", "csv"]
SIGNALS = [pytest.param(getattr(signal, name), id=name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(".big.csv.")]


@pytest.mark.parametrize("signum", SIGNALS)
def test_a_signal_during_output_leaves_no_temporary_file(tmp_path: Path, signum: int) -> None:
    target = tmp_path / "big.csv"
    env = {"PYTHONPATH": str(ROOT), "PATH": "", "ESTIMATOR_CACHE_DIR": str(tmp_path / "cache")}
    process = subprocess.Popen([sys.executable, "-m", "estimator", *SWEEP, "-o", str(target)], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120  # the start, on a loaded machine, before the first row is written
        while not _temporaries(tmp_path) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _temporaries(tmp_path), "the sweep wrote no temporary file"
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 128 + signum, (process.returncode, stderr)
    assert stderr == f"error: terminated by {signal.Signals(signum).name}\n"
    assert stdout == ""
    assert _temporaries(tmp_path) == []
    assert not target.exists()


def test_the_handlers_are_restored_and_a_late_signal_ends_with_its_status() -> None:
    before = signal.getsignal(signal.SIGTERM)
    inside = []

    def body() -> None:
        with signals_end_like_interrupts():
            inside.append(signal.getsignal(signal.SIGTERM))
            raise Terminated(signal.SIGTERM)

    with pytest.raises(SystemExit) as ended:
        body()
    assert ended.value.code == 128 + signal.SIGTERM
    assert inside != [before]
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_signal_whose_exception_was_dropped_still_ends_with_its_status() -> None:
    """Python drops an exception raised inside a finaliser (it prints "Exception ignored"); the status stays."""

    def body() -> None:
        with signals_end_like_interrupts(), contextlib.suppress(Terminated):  # as a finaliser would drop it
            signal.raise_signal(signal.SIGTERM)

    with pytest.raises(SystemExit) as ended:
        body()
    assert ended.value.code == 128 + signal.SIGTERM
