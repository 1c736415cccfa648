"""The fast slice of the fuzz campaign (tests/fuzz/campaign.py): every generated command line and request keeps
its promise — one 'error:' line and exit 2 or 3 for bad input, a located refusal and no 5xx from the API, never a
traceback, a hang, partial stdout, a non-finite or negative figure, or code run from a file. The long run is
``python -m lab.fuzz.campaign`` (docs/reliability.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz import commands
from tests.fuzz.campaign import Case, Outcome, generate, problems, run
from tests.fuzz.hostile import PICKLE_MARKER, hostile_pickles

SEED = 20261201
CASES = 1000  # the long run measured about 0.02 CPU-s a case; the benchmark runs 100,000


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
    monkeypatch.setattr("estimator.__main__._cli_main", busy)
    outcome = run(next(iter(generate(SEED, 1))), tmp_path / "busy")
    assert outcome.problems[:1] == ["hang: more than 0.2 s of CPU time"]
    # the timer fired on CPU time, not wall time: process_time and ITIMER_PROF tick separately (a run read 0.196 s
    # at a 0.2 s timer), so the check is that most of the limit was spent working
    assert outcome.cpu_seconds >= 0.15


def test_the_slice_covers_every_subcommand_the_api_and_hostile_files() -> None:
    cases = list(generate(SEED, CASES))
    firsts = {case.args[0] for case in cases if case.args}
    assert set(commands.COMMANDS) | {"HTTP"} <= firsts
    named = {name for case in cases for name, _ in case.files}
    assert any(name.startswith("specs/") for name in named)  # a specs folder with a hostile spec file
    assert any(name.startswith("exploit-") for name in named)  # a pickle that would run code
    assert any(name.startswith("partial-") for name in named)  # a config that lacks a field setting the size


@pytest.mark.usefixtures("quiet_environment")
def test_no_pickle_oom_reads_runs_code_and_the_marker_would_show_it(tmp_path: Path) -> None:
    """Every malicious pickle of the campaign, given to `oom`, is one line and creates no marker; the same bytes
    unpickled by plain `pickle.loads` do create it, so a missing marker means nothing ran."""
    import os
    import pickle

    exploits = [(name, data) for name, data in hostile_pickles() if name.startswith("exploit-")]
    assert len(exploits) >= 20
    for index, (name, data) in enumerate(exploits):
        outcome = run(Case(("oom", "--from", "{dir}/" + name), ((name, data),)), tmp_path / str(index))
        assert outcome.problems == [], (name, outcome.problems)
        assert outcome.code == 2 and not (tmp_path / str(index) / PICKLE_MARKER).exists()
    control = tmp_path / "control"
    control.mkdir()
    os.chdir(control)
    pickle.loads(dict(exploits)["exploit-1-p4.pickle"]).close()  # builtins.open(marker, "w"): what an unsafe
    assert (control / PICKLE_MARKER).exists()  # reader would run


def test_a_server_error_is_counted() -> None:
    case = Case(("HTTP", "GET", "/v1/estimate?model=gpt2&gpu=h100"))
    crashed = Outcome(case, 500, '{"detail": [{"loc": ["query"], "msg": "internal error", "type": "x"}]}',
                      "application/json", 0.1)
    assert [p.split(":")[0] for p in problems(crashed)] == ["HTTP 500"]
    unlocated = Outcome(case, 422, '{"detail": "bad"}', "application/json", 0.1)
    assert problems(unlocated) and "not a list" in problems(unlocated)[0]


def test_pydantic_s_wording_in_an_error_is_counted() -> None:
    case = Case(("monitor", "--count", "x"))
    worded = Outcome(case, 2, "", "error: Invalid value for '--count': Input should be a valid integer\n", 0.1)
    assert [p.split(":")[0] for p in problems(worded)] == ["pydantic's words in the error"]
    assert problems(Outcome(case, 2, "", "error: --count must be a whole number, got 'x'\n", 0.1)) == []
