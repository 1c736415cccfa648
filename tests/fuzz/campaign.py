"""A seeded fuzz campaign over every front end: generated command lines, hostile files and HTTP requests, run
in-process.

A case is a command line of any subcommand (tests/fuzz/commands.py: any option, valid or hostile values, files
from tests/fuzz/hostile.py — config.json files broken, absurd or partial, YAML bombs, a specs folder with one
hostile spec file, `oom`'s texts and malicious pickles) or a request to the HTTP API (tests/fuzz/server.py). Its
files are written into a scratch folder, which is also its working folder. A command line keeps the CLI's promise:

- exit 0: something on stdout; JSON output parses with no NaN or infinity and no negative figure (a headroom may
  be negative: it says by how much a job does not fit);
- exit 2 (bad input) or 3 (what the machine lacks: a GPU, an extra): nothing on stdout, and exactly one line on
  stderr that starts with ``error:``, in the tool's words, not pydantic's (`server.PYDANTIC_WORDS`); no other
  exit code;
- never an exception escaping the CLI (a traceback), never more than `CASE_SECONDS` of CPU time (work that does
  not end) nor `WALL_SECONDS` of wall time (a wait that does not end);
- a file from earlier work (``taken.*``) named as an output is never replaced without ``--force``;
- nothing in a file runs: a pickle or YAML tag that would create `PICKLE_MARKER` in the working folder never does.

A request keeps the API's promise (tests/fuzz/server.py): no 5xx, a document without non-finite or negative
figures, a refusal located at its fields, within the same time limits.

`tests/fuzz/test_campaign.py` runs a fast slice in CI; ``python -m lab.fuzz.campaign --cases 100000``
runs the long one (docs/reliability.md). The same seed always gives the same cases.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz import commands, server
from tests.fuzz.hostile import PICKLE_MARKER
from tests.fuzz.server import PYDANTIC_WORDS

# A hang is unbounded work or an endless wait. Work is counted in the process's CPU time (user + system, the
# ITIMER_PROF clock), which other jobs on a shared machine do not inflate: at a load average of 8 on 2 cores a
# 3.5 s plan took 19-30 s of wall time and was filed as a hang. A wait uses no CPU, so a wall-clock ceiling, well
# above any case's work times the slow-down of a loaded machine, catches it.
CASE_SECONDS = 20  # CPU seconds (the slowest valid command here takes ~4 s)
WALL_SECONDS = 300
EXIT_CODES = {0, 2, 3}  # success, bad input, what the machine lacks (estimator/errors.py gives each error its code)

# Each generator and its share of the cases: the commands users run most, most often; every subcommand some
GENERATORS: tuple[tuple[Callable[[random.Random, list[tuple[str, bytes]]], list[str]], float], ...] = (
    (commands.estimate, 0.35), (commands.train, 0.19), (commands.plan, 0.09), (commands.sweep, 0.06),
    (commands.oom, 0.10), (commands.catalog, 0.06), (commands.needs_a_gpu, 0.02),
    (commands.serve_refused, 0.01), (commands.with_specs, 0.01), (server.request, 0.11))


@dataclass(frozen=True)
class Case:
    """One command line or request; ``{dir}`` in an argument is the case's scratch folder, where ``files`` are
    written (``stdin``: what the command reads on stdin; ``body``: a request's body; ``specs/…``: a file of a copy
    of the shipped specs)."""

    args: tuple[str, ...]
    files: tuple[tuple[str, bytes], ...] = ()

    @property
    def http(self) -> bool:
        return self.args[:1] == ("HTTP",)


@dataclass
class Outcome:
    case: Case
    code: int  # the exit status, or a request's HTTP status
    stdout: str  # a request's: its body
    stderr: str  # a request's: its content type
    seconds: float
    escaped: str | None = None  # the exception that escaped the CLI, if one did
    cpu_seconds: float = 0.0  # this process's CPU time (user + system) during the case
    problems: list[str] = field(default_factory=list)


def generate(seed: int, count: int) -> Iterator[Case]:
    """``count`` cases from ``seed``: the same seed gives the same cases on every machine."""
    rng = random.Random(seed)
    makers = [g for g, _ in GENERATORS]
    weights = [w for _, w in GENERATORS]
    for _ in range(count):
        files: list[tuple[str, bytes]] = []
        args = rng.choices(makers, weights)[0](rng, files)
        yield Case(tuple(args), tuple(dict(files).items()))


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    clock = "of CPU time" if signum == signal.SIGPROF else "of wall time"
    limit = CASE_SECONDS if signum == signal.SIGPROF else WALL_SECONDS
    raise _Timeout(f"more than {limit} s {clock}")


def _written(case: Case, scratch: Path) -> bytes:
    """Write ``case``'s files under ``scratch`` (a ``specs/…`` file into a copy of the shipped specs); what it reads
    on stdin."""
    scratch.mkdir(parents=True, exist_ok=True)
    if any(name.startswith("specs/") for name, _ in case.files):
        from estimator.catalog.files import default_specs_dir

        shutil.copytree(default_specs_dir(), scratch / "specs", dirs_exist_ok=True)
    for name, content in case.files:
        if name not in ("stdin", "body"):
            (scratch / name).parent.mkdir(parents=True, exist_ok=True)
            (scratch / name).write_bytes(content)
    return dict(case.files).get("stdin", b"")


def _cli(case: Case, scratch: Path, stdin: bytes) -> tuple[int, str, str]:
    """Run the command line through the `estimator` console script's entry point (the CLI with `serve`), in-process:
    exit status, stdout, stderr."""
    from estimator.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    saved = sys.argv, sys.stdin
    sys.argv = ["estimator", *(a.replace("{dir}", str(scratch)) for a in case.args)]
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        sys.argv, sys.stdin = saved
        out_text, err_text = out.getvalue(), err.getvalue()
    return code, out_text, err_text


def _http(case: Case) -> tuple[int, str, str]:
    status, content_type, body = server.send(case.args, dict(case.files))
    binary = "spreadsheet" in content_type  # kept byte for byte (latin-1), so the check sees its zip signature
    return status, body.decode("latin-1") if binary else body.decode("utf-8", errors="replace"), content_type


def run(case: Case, scratch: Path) -> Outcome:
    """Run ``case`` in-process, in ``scratch`` (its files written there), within the CPU and wall-clock limits."""
    stdin = _written(case, scratch)
    code, stdout, stderr, escaped = 0, "", "", None
    home = os.getcwd()
    os.chdir(scratch)  # what a file would create if it ran lands here, where it is looked for
    previous = signal.signal(signal.SIGALRM, _alarm), signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, CASE_SECONDS)
    signal.alarm(WALL_SECONDS)
    start, cpu_start = time.perf_counter(), time.process_time()
    try:
        code, stdout, stderr = _http(case) if case.http else _cli(case, scratch, stdin)
    except _Timeout as timeout:
        escaped = f"hang: {timeout}"
    except BaseException as error:  # any escape is the finding
        escaped = f"{type(error).__name__}: {str(error)[:200]}"
    finally:
        signal.alarm(0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGALRM, previous[0])
        signal.signal(signal.SIGPROF, previous[1])
        os.chdir(home)
    outcome = Outcome(case, code, stdout, stderr, time.perf_counter() - start, escaped,
                      time.process_time() - cpu_start)
    outcome.problems = problems(outcome)
    if (scratch / PICKLE_MARKER).exists():
        outcome.problems.append("code ran from a file: a pickle or YAML tag created its marker")
    if "--force" not in case.args:  # earlier work is never replaced unasked
        outcome.problems += [f"{name} replaced without --force" for name, content in case.files
                             if name.startswith("taken.") and (scratch / name).read_bytes() != content]
    return outcome


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} in JSON")


def _bad_numbers(value: Any, path: str = "") -> list[str]:
    """Negative figures in a parsed JSON document (headroom and signed gaps excepted)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _bad_numbers(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _bad_numbers(v, f"{path}[{i}]")]
    signed = ("headroom", "gap", "error", "delta", "_vs_", "residual")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            return [f"non-finite {path}"]
        if value < 0 and not any(s in path for s in signed):
            return [f"negative {path} = {value}"]
    return []


def problems(o: Outcome) -> list[str]:
    """Every way ``o`` breaks the CLI's promise (empty when it keeps it)."""
    found = []
    if o.escaped is not None:  # a hang is its own kind: counting it as a traceback hid what the run found
        found.append(o.escaped if o.escaped.startswith("hang:") else f"traceback: {o.escaped}")
    if "Traceback (most recent call last)" in o.stdout + o.stderr:
        found.append("traceback printed")
    if o.escaped is not None:
        return found
    if o.case.http:
        return found + server.answer_problems(o.code, o.stderr, o.stdout.encode(), _bad_numbers)
    if o.code not in EXIT_CODES:
        found.append(f"exit code {o.code}")
    if o.code == 0:
        found += _output_problems(o)
    else:
        if o.stdout.strip():
            found.append("partial stdout on error")
        lines = [line for line in o.stderr.splitlines() if line.strip()]
        if len(lines) != 1 or not lines[0].startswith("error: "):
            found.append(f"error is not one 'error:' line: {o.stderr[:200]!r}")
        if any(words in o.stderr for words in PYDANTIC_WORDS):
            found.append(f"pydantic's words in the error: {o.stderr[:200]!r}")
    return found


def _output_problems(o: Outcome) -> list[str]:
    help_or_list = not o.case.args or "--help" in o.case.args
    if not o.stdout.strip() and not help_or_list and "-o" not in o.case.args:
        return ["exit 0 with nothing on stdout"]
    text = o.stdout.strip()
    if text[:1] in ("{", "["):
        try:
            return _bad_numbers(json.loads(text, parse_constant=_reject_constant))
        except ValueError as error:
            return [f"JSON does not parse strictly: {str(error)[:120]}"]
    lowered = f" {o.stdout.lower()} "
    return [f"'{word.strip()}' in output" for word in (" nan ", " inf ", "nan%", "inf%") if word in lowered]
