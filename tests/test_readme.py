"""The README and the docs pages a user reads first show commands that run and output that is the real output.

Every ``$ `` line of a fenced block in README.md and in the pages of ``PAGES`` is a command: it runs in-process
(``estimate ...`` as the `estimate` program, ``estimator ...`` as `estimator`) in a terminal ``COLUMNS`` wide and
exits 0. The lines shown under it, down to the next command or the block's end, are what it prints (``…`` marks
lines left out): each shown line is a line of the real stdout or stderr (trailing blanks aside), in the order the
stream printed them, so a figure shown is a figure printed. Every Python block of those pages runs as written and
prints exactly the ``text`` block shown under it; the README's computes the Quick start's job, and its Quick start
keeps the two command lines CI runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import CliResult

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, ROOT / "docs" / "options.md", ROOT / "docs" / "oom.md", ROOT / "docs" / "api.md",
         ROOT / "docs" / "models.md"]
COLUMNS = 100  # the width the shown output was printed at
ELIDED = "…"
QUICK_START = ["pip install . && estimate --model llama-3.1-8b --gpu h100 --batch 8 --prompt-tokens 4096",
               "pip install '.[test]' && python -m pytest"]
FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Example:
    """One command of a page and the output lines the page shows under it."""

    page: str
    command: str
    shown: tuple[str, ...]


def blocks(text: str, language: str = "") -> list[str]:
    """The bodies of the fenced blocks of ``text`` tagged ``language`` (untagged by default)."""
    return [body for tag, body in FENCE.findall(text) if tag == language]


def examples(page: Path) -> list[Example]:
    """Every ``$ `` command of ``page``'s untagged blocks, with the output lines shown under it."""
    found: list[Example] = []
    for body in blocks(page.read_text(encoding="utf-8")):
        command: list[str] = []
        shown: list[str] = []
        lines = body.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("$ "):
                command, shown = [line[2:]], []
            elif command and command[-1].endswith("\\"):
                command.append(line)
            elif command:
                shown.append(line)
            if command and not command[-1].endswith("\\") and (i + 1 == len(lines) or lines[i + 1].startswith("$ ")):
                text = " ".join(part.rstrip("\\").strip() for part in command)
                found.append(Example(page.relative_to(ROOT).as_posix(), text, tuple(shown)))
                command = []
    return found


EXAMPLES = [example for page in PAGES if page.exists() for example in examples(page)]


def run(cli: Callable[..., CliResult], command: str) -> CliResult:
    """``command`` as a user types it: ``estimate ...`` is the `estimate` program, ``estimator ...`` the other."""
    program, *args = shlex.split(command)
    assert program in ("estimate", "estimator"), command
    return cli(*args, entry=program, columns=COLUMNS)


def assert_shown(shown: tuple[str, ...], result: CliResult) -> None:
    """Each shown line is a line of stdout or of stderr, in the order that stream printed it."""
    streams = {name: [line.rstrip() for line in text.splitlines()]
               for name, text in (("stdout", result.stdout), ("stderr", result.stderr))}
    position = dict.fromkeys(streams, 0)
    for line in (line.rstrip() for line in shown):
        if line == ELIDED:
            continue
        for name, printed in streams.items():
            if line in printed[position[name]:]:
                position[name] = printed.index(line, position[name]) + 1
                break
        else:
            raise AssertionError(f"shown but not printed (in this order): {line!r}\n{result.stdout}{result.stderr}")


def test_the_pages_hold_examples() -> None:
    """The parse finds the README's examples (a change of its layout must not leave this test with nothing)."""
    readme = [e for e in EXAMPLES if e.page == "README.md"]
    assert len(readme) >= 8
    assert sum(1 for e in readme if e.shown) >= 6


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.page}: {e.command}" for e in EXAMPLES])
def test_example_runs_and_prints_what_the_page_shows(cli: Callable[..., CliResult], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch, example: Example) -> None:
    (tmp_path / "tests").symlink_to(ROOT / "tests")  # the examples' input files, by their repository paths
    monkeypatch.chdir(tmp_path)  # output files (-o grid.csv) land here
    result = run(cli, example.command)
    assert result.exit_code == 0, result.stderr
    assert_shown(example.shown, result)


def test_quick_start_keeps_the_commands_ci_runs(cli: Callable[..., CliResult]) -> None:
    """The Quick start's two lines, verbatim (.ci/run runs the second); the first's estimate runs."""
    quick = blocks(README.read_text(encoding="utf-8").split("## Quick start", 1)[1])[0].splitlines()
    assert quick == QUICK_START
    result = run(cli, quick[0].split(" && ", 1)[1])
    assert result.exit_code == 0, result.stderr
    assert "fits" in result.stdout


def python_examples(page: Path) -> list[tuple[str, str | None]]:
    """``page``'s Python blocks, each with the ``text`` block that follows it (what it prints), if one does."""
    parts = re.split(r"^```python\n(.*?)^```\n", page.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    found: list[tuple[str, str | None]] = []
    for code, after in zip(parts[1::2], parts[2::2], strict=True):
        shown = re.match(r"```text\n(.*?)^```", after, re.MULTILINE | re.DOTALL)
        found.append((code, shown.group(1) if shown else None))
    return found


PYTHON = [(page.relative_to(ROOT).as_posix(), code, shown) for page in PAGES if page.exists()
          for code, shown in python_examples(page)]


def execute(code: str, name: str) -> str:
    """What ``code`` prints, run as written in a fresh namespace."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, name, "exec"), {})  # the page's own code, run as a user would
    return printed.getvalue()


@pytest.mark.parametrize(("page", "code", "shown"), PYTHON, ids=[f"{p}: python {i}" for i, (p, _, _) in
                                                                   enumerate(PYTHON)])
def test_python_block_runs_and_prints_what_the_page_shows(page: str, code: str, shown: str | None) -> None:
    printed = execute(code, page)
    assert shown is not None, f"{page}: a Python block without the text block of what it prints"
    assert printed == shown


def test_readme_python_block_is_the_quick_start_job(cli: Callable[..., CliResult]) -> None:
    """The README's Python block computes the Quick start's job: its total bytes are the command's JSON's."""
    ((code, _),) = python_examples(README)
    fits, total_bytes, *_ = execute(code, "README.md").split()
    result = run(cli, QUICK_START[0].split(" && ", 1)[1] + " --format json")
    assert result.exit_code == 0, result.stderr
    memory = json.loads(result.stdout)["memory"]
    assert (fits == "True", int(total_bytes)) == (memory["fits"], memory["total_bytes"])


def test_readme_reads_in_five_minutes() -> None:
    """The front door stays short (under 12 KiB); depth lives in docs/."""
    assert README.stat().st_size < 12 * 1024


LINKED = [*PAGES, *(ROOT / "docs" / name for name in ("planning.md", "training.md", "live-gpu.md", "architecture.md"))]


@pytest.mark.parametrize("page", [p for p in LINKED if p.exists()], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page: Path) -> None:
    """Every relative link of the page names a file or folder of the repository."""
    targets = re.findall(r"\]\(([^)#\s]+)[^)]*\)", page.read_text(encoding="utf-8"))
    local = [t for t in targets if "://" not in t]
    assert local or page != README
    missing = [t for t in local if not (page.parent / t).exists()]
    assert not missing, missing
