"""The fast slice of the fuzz campaign (tests/fuzz/campaign.py): every generated command line keeps the CLI's
promise — one 'error:' line and a non-zero exit for bad input, never a traceback, a hang, partial stdout, or a
non-finite or negative figure. The long run is ``python -m lab.fuzz.campaign`` (docs/reliability.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.campaign import Outcome, generate, problems, run

SEED = 20261201
CASES = 1000  # ~15 s on one core (0.013 CPU-s a case); the benchmark runs 100,000


@pytest.fixture
def quiet_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ESTIMATOR_NO_CALIBRATION", "1")
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(tmp_path)


@pytest.mark.usefixtures("quiet_environment")
def test_every_generated_command_line_keeps_the_promise(tmp_path: Path) -> None:
    failures = []
    for index, case in enumerate(generate(SEED, CASES)):
        outcome = run(case, tmp_path / f"case-{index}")
        failures += [f"{' '.join(case.args)[:160]}: {p}" for p in outcome.problems]
    assert failures == []


def test_the_same_seed_gives_the_same_cases() -> None:
    assert list(generate(SEED, 50)) == list(generate(SEED, 50))
    assert list(generate(SEED, 50)) != list(generate(SEED + 1, 50))


def test_a_hang_is_counted_as_a_hang_and_an_escape_as_a_traceback() -> None:
    case = next(iter(generate(SEED, 1)))
    hang = Outcome(case, 0, "", "", 20.0, escaped="hang: more than 20 s of CPU time")
    escape = Outcome(case, 0, "", "", 0.1, escaped="ValueError: boom")
    assert problems(hang) == ["hang: more than 20 s of CPU time"]
    assert problems(escape) == ["traceback: ValueError: boom"]
    assert [p.split(":")[0] for p in problems(hang) + problems(escape)] == ["hang", "traceback"]  # the run's kinds


def test_a_case_that_works_past_the_cpu_limit_is_a_hang(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.fuzz import campaign

    def busy() -> None:
        while True:  # unbounded work: only the CPU-time clock ends it
            pass

    monkeypatch.setattr(campaign, "CASE_SECONDS", 0.2)
    monkeypatch.setattr("estimator.cli.main.main", busy)
    outcome = run(next(iter(generate(SEED, 1))), tmp_path / "busy")
    assert outcome.problems[:1] == ["hang: more than 0.2 s of CPU time"]
    # the timer fired on CPU time, not wall time: process_time and ITIMER_PROF tick separately (a run read 0.196 s
    # at a 0.2 s timer), so the check is that most of the limit was spent working
    assert outcome.cpu_seconds >= 0.15
