"""Every command's --help opens with two or three examples, and the examples that need no GPU, no file and no
pipe run as printed (an example that fails would teach the wrong thing)."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator

import pytest
import typer

from estimator.cli.main import app
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
LIVE = {"gpu", "monitor", "calibrate", "validate", "serve"}  # need a GPU, torch, or start a server


def _commands() -> Iterator[list[str]]:
    root = typer.main.get_command(app)

    def walk(command: object, path: list[str]) -> Iterator[list[str]]:
        yield path
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from walk(sub, [*path, name])

    for name, command in sorted(root.commands.items()):  # type: ignore[attr-defined]
        yield from walk(command, [name])


COMMANDS = list(_commands())


def _examples(cli: Cli, path: list[str]) -> list[str]:
    result = cli(*path, "--help", columns=200)
    assert result.exit_code == 0, result.stderr
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    # Usage, the one-line summary, then the examples, before any option (estimate, plan and sweep list theirs by
    # topic: "Workload options:" ...)
    first = next((i for i, line in enumerate(lines) if line.endswith("ptions:")), len(lines))
    head = lines[:first]
    assert "Examples:" in head, result.stdout
    return [line for line in head[head.index("Examples:") + 1:] if "estimator " in line]


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_help_opens_with_examples(cli: Cli, path: list[str]) -> None:
    examples = _examples(cli, path)
    assert 2 <= len(examples) <= 3, examples
    assert all(f"estimator {' '.join(path)}" in example for example in examples), examples


@pytest.mark.parametrize("path", [p for p in COMMANDS if p[0] not in LIVE and p != ["oom"]], ids=" ".join)
def test_examples_run(cli: Cli, path: list[str]) -> None:
    for example in _examples(cli, path):
        words = shlex.split(example)
        if any(w in (">", "|", "-o", "--plot") for w in words):
            continue  # writes a file or reads a pipe
        result = cli(*words[1:], columns=200)
        assert result.exit_code == 0, (example, result.stderr)
