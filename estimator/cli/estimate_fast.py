"""The `estimate` console script: its options parsed without typer where that is plain, typer for the rest.

Importing typer and building the command from its signature cost about a quarter of the script's cold start. A
well-formed command line (every word a known option, ``--name VALUE`` or ``--name=VALUE``, each option once, every
value one the option's type takes as it is) is parsed here, by the `OPTIONS` table: the estimate command's own
option definitions (`estimate.py`), written out. tests/cli/test_estimate_fast.py rebuilds the table from the
typer command and compares, and parses many command lines both ways. Anything else — ``--help``, an unknown or
repeated option, a missing or odd value, a bad choice — goes to typer (`estimate.estimate_main`), so help, usage
errors and their exit codes are typer's, unchanged.
"""

from __future__ import annotations

import atexit
import errno
import gc
import os
import re
import sys
from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple

from estimator.cli.process import without_pydantic_plugins
from estimator.cli.shared import Logits, MlaCache, OutputFormat, Units, writable
from estimator.training.options import Attention, Fsdp, Mode, Optimizer, Precision, Recompute


class Opt(NamedTuple):
    """One option: its parameter name, flags, what it takes ("str", "int", "path", "flag" or a choice), default,
    whether the typer option checks its path when parsed (the `writable` callback), and whether it is eager
    (typer parses it before the others: ``--force``, which that check reads)."""

    name: str
    flags: tuple[str, ...]
    kind: str | type[Enum]
    default: Any = None
    checked: bool = False
    eager: bool = False


# The estimate command's options in declaration order (tests/cli/test_estimate_fast.py: equal to the typer command's).
OPTIONS: tuple[Opt, ...] = (
    Opt("model", ("--model", "-m"), "str"),
    Opt("gpu", ("--gpu", "-g"), "str"),
    Opt("dtype", ("--dtype",), "str"),
    Opt("kv_dtype", ("--kv-dtype",), "str"),
    Opt("batch", ("--batch",), "str", "1"),
    Opt("prompt_tokens", ("--prompt-tokens",), "str", "2048"),
    Opt("output_tokens", ("--output-tokens",), "str", "0"),
    Opt("gpus", ("--gpus",), "str", "1"),
    Opt("ep", ("--ep",), "str"),
    Opt("gpu_memory", ("--gpu-memory",), "str"),
    Opt("system", ("--system",), "str"),
    Opt("nodes", ("--nodes",), "str"),
    Opt("gpus_per_node", ("--gpus-per-node",), "str"),
    Opt("network", ("--network",), "str"),
    Opt("logits", ("--logits",), Logits, Logits.last),
    Opt("profile", ("--profile",), "str", "optimized"),
    Opt("mla_cache", ("--mla-cache",), MlaCache),
    Opt("group_size", ("--group-size",), "int"),
    Opt("output_format", ("--format", "-f"), OutputFormat, OutputFormat.table),
    Opt("units", ("--units",), Units, Units.gb),
    Opt("explain", ("--explain",), "flag", False),
    Opt("specs_dir", ("--specs-dir",), "path"),
    Opt("mode", ("--mode",), Mode, Mode.infer),
    Opt("seq_len", ("--seq-len",), "str"),
    Opt("grad_accum", ("--grad-accum",), "str"),
    Opt("precision", ("--precision",), Precision),
    Opt("optimizer", ("--optimizer",), Optimizer),
    Opt("recompute", ("--recompute",), Recompute),
    Opt("attention", ("--attention",), Attention),
    Opt("zero", ("--zero",), "str"),
    Opt("fsdp", ("--fsdp",), Fsdp),
    Opt("dp", ("--dp",), "str"),
    Opt("tp", ("--tp",), "str"),
    Opt("pp", ("--pp",), "str"),
    Opt("cp", ("--cp",), "str"),
    Opt("virtual_stages", ("--virtual-stages",), "str"),
    Opt("sequence_parallel", ("--sequence-parallel",), "flag", False),
    Opt("lora_rank", ("--lora-rank",), "str"),
    Opt("lora_targets", ("--lora-targets",), "str"),
    Opt("qlora", ("--qlora",), "flag", False),
    Opt("output", ("--output", "-o"), "path", None, True),
    Opt("plot", ("--plot",), "path", None, True),
    Opt("force", ("--force",), "flag", False, eager=True),
    Opt("calibration", ("--calibration",), "path"),
)
REQUIRED = ("model",)
_BY_FLAG = {flag: opt for opt in OPTIONS for flag in opt.flags}
_BY_NAME = {opt.name: opt for opt in OPTIONS}
_DIGITS = re.compile(r"[0-9]{1,18}")
_UNPARSED = object()


def _convert(opt: Opt, value: str) -> Any:
    """The value as the typer option converts it, or `_UNPARSED` where typer is to decide (or refuse)."""
    if not value or value.startswith("-") or "\x00" in value:
        return _UNPARSED  # a value that looks like an option, or none: typer's rules, typer's message
    if opt.kind == "str":
        return value
    if opt.kind == "int":
        return int(value) if _DIGITS.fullmatch(value) else _UNPARSED
    if opt.kind == "path":
        return Path(value)
    assert isinstance(opt.kind, type)
    return next((choice for choice in opt.kind if choice.value == value), _UNPARSED)


def parse(args: Sequence[str]) -> tuple[dict[str, Any], list[str]] | None:
    """(parameter name → value as typer gives it, the names given in command-line order) for a plain command
    line; None for anything else (typer then parses it)."""
    given: dict[str, Any] = {}
    words = list(args)
    while words:
        word = words.pop(0)
        flag, equals, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        opt = _BY_FLAG.get(flag)
        if opt is None or opt.name in given:
            return None
        if opt.kind == "flag":
            if equals:
                return None
            given[opt.name] = True
            continue
        if not equals:
            if not words:
                return None
            inline = words.pop(0)
        value = _convert(opt, inline)
        if value is _UNPARSED:
            return None
        given[opt.name] = value
    if any(name not in given for name in REQUIRED):
        return None
    return {opt.name: given.get(opt.name, opt.default) for opt in OPTIONS}, list(given)


def _checked(params: dict[str, Any], order: list[str]) -> dict[str, Any]:
    """``params`` after the options' callbacks, run as typer runs them while parsing: the eager ``--force`` first,
    then the given options in command-line order (an option left out has None, which its callback lets pass)."""
    for name in order:
        if _BY_NAME[name].checked:
            writable(params[name], force=params["force"])
    return params


def estimate_main() -> None:
    """`estimate` console script: the estimate command on its own, its options parsed here when plain (no typer
    imported), by typer otherwise.

    The cyclic garbage collector is paused while it runs (and resumed after, for a caller in the same process):
    importing pydantic and building the models allocates enough to trigger some 60 collections that find almost
    nothing, about 7 % of a short process's time. When the process exits, the objects it holds are frozen
    (`gc.freeze`, registered with atexit, so it happens at exit only, after the exit handlers registered later,
    such as the built-spec cache's save): the interpreter's last collections then skip the ~300,000 objects of
    pydantic's and the estimator's classes and schemas, which the operating system frees with the process, instead
    of walking them all (about 6 % of a cold `estimate --format json`, docs/performance.md). pydantic's plugin
    search is off while it runs (`process.without_pydantic_plugins`).
    """
    atexit.unregister(gc.freeze)  # once, however often a caller in the same process runs the script
    atexit.register(gc.freeze)
    collecting = gc.isenabled()
    gc.disable()
    try:
        with without_pydantic_plugins():
            _main(sys.argv[1:])
    finally:
        if collecting:
            gc.enable()


def _main(args: list[str]) -> None:
    parsed = None if _completing() else parse(args)
    if parsed is None:
        from estimator.cli.estimate import estimate_main as typer_main

        typer_main()
        return
    from estimator.cli.estimate_run import run_estimate
    from estimator.cli.run import guarded

    params, order = parsed
    guarded(lambda: _as_typer_invokes(lambda: run_estimate(_checked(params, order))))


def _completing() -> bool:
    """Whether a shell asks for completions (typer answers ``_ESTIMATE_COMPLETE=…``; any such variable counts)."""
    return any(name.startswith("_") and name.endswith("_COMPLETE") and value for name, value in os.environ.items())


class _Pacified:
    """sys.stdout or sys.stderr after a closed pipe, as typer leaves them: a flush swallows the broken pipe (the
    interpreter flushes both at exit)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError as error:
            if error.errno != errno.EPIPE:
                raise

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.wrapped, attr)


def _as_typer_invokes(call: Callable[[], Any]) -> Any:
    """``call()`` as typer's main runs a command (not standalone), so the script ends as the typer command does:
    input that ends, a blank line and Abort; Ctrl-C, status 130 without a word; a closed pipe, status 1 without a
    word (tests/cli/test_estimate_fast.py compares the two)."""
    from estimator.cli.run import Aborted

    try:
        return call()
    except EOFError as error:
        sys.stderr.write("\n")
        sys.stderr.flush()
        raise Aborted from error
    except KeyboardInterrupt:
        return 130
    except OSError as error:
        if error.errno != errno.EPIPE:
            raise
        sys.stdout, sys.stderr = _Pacified(sys.stdout), _Pacified(sys.stderr)
        sys.exit(1)
