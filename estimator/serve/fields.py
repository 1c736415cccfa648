"""A request's query fields → a command's parameters, parsed by that command's own option definitions.

Each field is the CLI option of the same name (``prompt_tokens`` or ``prompt-tokens`` is ``--prompt-tokens``), so
defaults, choices and every check are the command's: a request and ``estimate ...`` cannot disagree. Options that
name files on the server (specs, calibration, prices, outputs, charts) or shape a terminal's output are not fields.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import typer

from estimator.errors import WorkloadInvalid

# Never read from a request: each names a file or folder on the server, or a terminal's rendering. The API's own
# `format` field picks JSON, CSV or XLSX.
SERVER_ONLY = frozenset({"specs_dir", "calibration", "plot", "output", "prices", "output_format", "units", "explain",
                         "progress", "force"})
RESERVED = frozenset({"format"})
MAX_QUERY_CHARS = 4096  # a share link of every field is under 1,000 characters; a request past this is refused
_TRUE, _FALSE = ("true", "1", "yes", "on", ""), ("false", "0", "no", "off")


class RequestInvalid(WorkloadInvalid):
    """Bad fields: (field, message) for each, answered as HTTP 422."""

    def __init__(self, errors: Sequence[tuple[str, str]]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(message for _, message in self.errors))


@dataclass(frozen=True)
class Command:
    """A CLI command's option definitions, by the field name a request gives."""

    name: str
    command: Any  # a click command; typer vendors click, so it is known by its interface, not its class
    fields: dict[str, Any]  # field name → its click option


def command_fields(name: str, function: Callable[..., Any]) -> Command:
    """The click command that typer builds from ``function`` (the CLI's own), and its request fields."""
    alone = typer.Typer(add_completion=False)
    alone.command(name)(function)
    built = typer.main.get_command(alone)
    fields = {p.name: p for p in built.params
              if getattr(p, "param_type_name", "") == "option" and p.name and p.name not in SERVER_ONLY}
    return Command(name, built, fields)


def field_of(message: str) -> str:
    """The field a CLI message names (``--batch must be positive`` → ``batch``), else ``query``."""
    found = re.search(r"--([a-z][a-z0-9-]*)", message)
    return found.group(1).replace("-", "_") if found else "query"


def _arguments(command: Command, query: Iterable[tuple[str, str]], fixed: dict[str, str]) -> list[str]:
    """The command line a query stands for; every unknown, repeated or malformed field is named at once."""
    errors: list[tuple[str, str]] = []
    given: set[str] = set()
    args = [f"--{name.replace('_', '-')}={value}" for name, value in fixed.items()]
    for key, value in query:
        name = key.replace("-", "_")
        if name in RESERVED:
            continue
        option = command.fields.get(name)
        if option is None or name in fixed:
            known = ", ".join(sorted(n for n in command.fields if n not in fixed))
            errors.append((key, f"{key!r} is not a field of {command.name}; fields: {known}"))
        elif name in given:
            errors.append((key, f"{key!r} is given more than once"))
        elif option.is_flag:
            if value.strip().lower() not in (*_TRUE, *_FALSE):
                errors.append((key, f"{key} is true or false, got {value!r}"))
            elif value.strip().lower() in _TRUE:
                args.append(_long(option))
        else:
            args.append(f"{_long(option)}={value}")
        given.add(name)
    if errors:
        raise RequestInvalid(errors)
    return args


def _long(option: Any) -> str:
    return str(next(o for o in option.opts if o.startswith("--")))


def parse(command: Command, query: Iterable[tuple[str, str]], fixed: dict[str, str] | None = None) -> dict[str, Any]:
    """The command's parameters (name → value, defaults filled in) for a query; ``fixed`` fields are set by the
    endpoint (``mode=train`` for /v1/train) and refused from the query."""
    args = _arguments(command, query, fixed or {})
    try:
        with command.command.make_context(command.name, args) as ctx:
            return dict(ctx.params)
    except Exception as error:
        if not (hasattr(error, "format_message") and hasattr(error, "exit_code")):  # a click usage error, as in run.py
            raise
        message = " ".join(str(error.format_message()).split()).replace("Value error, ", "")
        raise RequestInvalid([(field_of(message), message)]) from None
