"""What the commands write is what was asked: ``-o``'s extension sets the format (``-o plan.csv`` writes CSV), a
``--format`` that contradicts it is refused in one line, and every file written is said on stderr (path, kind,
rows, size). Also the program's first words: ``--version``, a short usage when run bare, help by topic."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from estimator.request.options import TOPICS
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
ESTIMATE = ("estimate", "--model", "llama-3.1-8b", "--gpu", "h100")
PLAN = ("plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "8")
SWEEP = ("sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "1,8", "--no-progress")
WROTE = re.compile(r"^wrote (\S+) \((\w[\w ]*?), (?:([\d,]+) rows?, )?[\d.]+ (?:k|M)?B\)$")


def _wrote(stderr: str) -> list[tuple[str, str, str | None]]:
    """The ``wrote`` lines of stderr as (path, kind, rows)."""
    found = [WROTE.match(line) for line in stderr.splitlines()]
    return [(m.group(1), m.group(2), m.group(3)) for m in found if m]


@pytest.mark.parametrize(("command", "name", "kind", "rows"), [
    (ESTIMATE, "out.json", "JSON", None),
    (ESTIMATE, "out.csv", "CSV", "1"),
    (ESTIMATE, "out.txt", "table", None),
    (PLAN, "plan.csv", "CSV", "1"),
    (PLAN, "plan.json", "JSON", None),
    (SWEEP, "x.json", "JSON", "2"),
    (SWEEP, "x.csv", "CSV", "2"),
])
def test_the_extension_sets_the_format_and_the_write_is_said(cli: Cli, tmp_path: Path, command: tuple[str, ...],
                                                             name: str, kind: str, rows: str | None) -> None:
    target = tmp_path / name
    done = cli(*command, "-o", str(target))
    assert done.exit_code == 0, done.stderr
    assert done.stdout == ""
    assert _wrote(done.stderr) == [(str(target), kind, rows)]
    text = target.read_text(encoding="utf-8")
    if kind == "JSON":
        json.loads(text)
    elif kind == "CSV":
        assert len(list(csv.DictReader(text.splitlines()))) == int(rows or 0)
    else:
        assert "┃" in text or "│" in text


@pytest.mark.parametrize("command", [ESTIMATE, PLAN, SWEEP])
def test_a_format_that_contradicts_the_extension_is_refused(cli: Cli, tmp_path: Path,
                                                            command: tuple[str, ...]) -> None:
    target = tmp_path / "out.json"
    done = cli(*command, "-o", str(target), "--format", "csv")
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--format csv contradicts --output" in done.stderr
    assert not target.exists()


def test_an_extension_the_command_does_not_write_is_refused(cli: Cli, tmp_path: Path) -> None:
    done = cli(*ESTIMATE, "-o", str(tmp_path / "out.xlsx"))
    assert done.exit_code == 2 and done.stderr.count("\n") == 1
    assert "does not write .xlsx files; name it .json, .csv" in done.stderr


def test_an_unknown_extension_takes_the_default_format(cli: Cli, tmp_path: Path) -> None:
    done = cli(*SWEEP, "-o", str(tmp_path / "grid.out"))
    assert done.exit_code == 0, done.stderr
    assert _wrote(done.stderr) == [(str(tmp_path / "grid.out"), "CSV", "2")]


def test_a_chart_is_said(cli: Cli, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    chart = tmp_path / "s.svg"
    done = cli(*SWEEP, "-o", str(tmp_path / "x.csv"), "--plot", str(chart))
    assert done.exit_code == 0, done.stderr
    assert (str(chart), "SVG chart", None) in _wrote(done.stderr)


def test_the_estimate_script_prints_the_version_too(cli: Cli) -> None:
    done = cli("--version", entry="estimate")
    assert done.exit_code == 0 and done.stdout == cli("--version").stdout and done.stderr == ""


def test_version_prints_the_package_version(cli: Cli) -> None:
    from estimator import __version__

    done = cli("--version")
    assert done.exit_code == 0
    printed = done.stdout.strip()
    assert re.fullmatch(r"estimator \d+\.\d+\.\d+\S*", printed), printed
    try:
        from importlib.metadata import version

        expected = version("llm-estimator")
    except Exception:  # not installed: run from a checkout, the source's version
        expected = __version__
    assert printed == f"estimator {expected}"


def test_bare_estimator_prints_a_short_usage(cli: Cli) -> None:
    done = cli(columns=80)
    assert done.exit_code == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0].startswith("usage: estimator COMMAND")
    assert len(lines) <= 15 and max(len(line) for line in lines) <= 80
    assert not any(line.startswith("error:") for line in lines)


@pytest.mark.parametrize("command", ["estimate", "plan", "sweep"])
def test_help_lists_the_options_by_topic(cli: Cli, command: str) -> None:
    done = cli(command, "--help", columns=80)
    assert done.exit_code == 0, done.stderr
    titles = [line[:-1] for line in done.stdout.splitlines() if line.endswith(" options:")]
    expected = [f"{t.capitalize()} options" for t in TOPICS]
    assert titles == [t for t in expected if t in titles] + ["Other options"]
    assert "Workload options" in titles and "Output options" in titles
    if command == "estimate":
        assert {"Hardware options", "Parallelism options", "Training options"} <= set(titles)


@pytest.mark.parametrize(("given", "resolved"), [("2k", "2,000"), ("2K", "2,048"), ("8Ki", "8,192")])
def test_the_report_prints_the_token_count_it_resolved(cli: Cli, given: str, resolved: str) -> None:
    done = cli(*ESTIMATE, "--prompt-tokens", given, columns=120)
    assert done.exit_code == 0, done.stderr
    assert f"prompt {resolved} + output 256 tokens" in done.stdout


def test_the_gpu_line_shows_the_card_size_beside_the_usable_memory(cli: Cli) -> None:
    """An H100 SXM5 is sold as 80 GB and reports 81,559 MiB = 79.6 GiB: both, each with its unit."""
    done = cli(*ESTIMATE, columns=200)
    assert "(from 'h100'): 80 GB card, 79.6 GiB usable, HBM3" in done.stdout
