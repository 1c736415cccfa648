"""Typer commands built from the request layer's option definitions (`estimator.request.options`): each option's
flags, type, default, help and checks become one parameter of a generated signature, so the CLI holds no option
table of its own; a command module supplies only the body and the help's summary and examples."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from estimator.cli.shared import writable
from estimator.request.options import TOPICS, Option, options_of

_TYPES: dict[str, Any] = {"text": str, "int": int, "path": Path, "flag": bool, "switch": bool, "texts": list[str]}


def _writable(ctx: typer.Context, path: Path | None) -> Path | None:
    """Option callback: an output path is checked before the command does any work (``--force`` is eager, so it
    is parsed before every path wherever it stands on the line)."""
    return writable(path, force=bool(ctx.params.get("force")))


def annotation(option: Option) -> Any:
    """The typer annotation of one option: its Python type (optional where it defaults to None) and its flags,
    help, eagerness and output check."""
    kind = option.takes if isinstance(option.takes, type) else _TYPES[option.takes]
    if option.default is None and not option.required:
        kind = kind | None
    info = typer.Option(*option.flags, help=option.help, is_eager=option.eager,
                        callback=_writable if option.checked else None, rich_help_panel=option.topic)
    return Annotated[kind, info]


class PanelledCommand(TyperCommand):
    """A command whose --help lists its options by topic (workload, hardware, parallelism, training, planning,
    output, catalog: `estimator.request.options.TOPICS`), one titled section each, in plain text as the rest of
    the help is (typer draws its panels only in rich mode, which this CLI keeps off)."""

    def format_options(self, ctx: Any, formatter: Any) -> None:  # typer's vendored click's Context, HelpFormatter
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None and param.param_type_name == "option":
                sections.setdefault(getattr(param, "rich_help_panel", None) or "", []).append(record)
        for topic in sorted(sections, key=lambda t: TOPICS.index(t) if t in TOPICS else len(TOPICS)):
            with formatter.section(f"{topic.capitalize()} options" if topic else "Other options"):
                formatter.write_dl(sections[topic])


def command_function(command: str, body: Callable[[dict[str, Any]], Any], doc: str) -> Callable[..., None]:
    """A function typer reads as ``command``: one keyword parameter per option of the command, in its help's
    order; called, it hands ``body`` every option's value by field name."""
    def run(**values: Any) -> None:
        body(values)

    parameters = [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation(o),
                                    default=inspect.Parameter.empty if o.required else o.default)
                  for o in options_of(command)]
    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    run.__doc__ = doc
    run.__name__ = run.__qualname__ = f"{command}_command"
    return run


def click_command(name: str, function: Callable[..., Any], **settings: Any) -> Any:
    """The click command typer builds from ``function`` alone (``settings``: the Typer app's)."""
    alone = typer.Typer(add_completion=False, **settings)
    alone.command(name, cls=PanelledCommand)(function)
    return typer.main.get_command(alone)


def parsed(name: str, function: Callable[..., Any], args: Sequence[str]) -> dict[str, Any]:
    """``name ARGS`` parsed by the command's options (callbacks run): field name → value."""
    with click_command(name, function).make_context(name, list(args)) as ctx:
        return dict(ctx.params)
