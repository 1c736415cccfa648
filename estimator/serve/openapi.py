"""The OpenAPI description of a command's fields, read from its click options: the API documents what it parses."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

from estimator.serve.fields import Command

FORMAT_FIELD: dict[str, Any] = {
    "name": "format", "in": "query", "required": False,
    "description": "json (the default), csv or xlsx; or send Accept: text/csv.",
    "schema": {"type": "string", "enum": ["json", "csv", "xlsx"]}}


MODEL_HELP = ("Catalog name or alias (llama-3.1-8b), or a size such as 70b; never a path: POST a config.json as "
              "the body instead.")


def _choices(option: Any) -> list[Any]:
    """An option's choices: click's Choice type, or (typer 0.2x keeps no click type) its Enum annotation."""
    choices = getattr(getattr(option, "type", None), "choices", None)
    if choices:
        return list(choices)
    annotation = getattr(getattr(option, "type_descriptor", None), "annotation", None)
    return list(annotation) if isinstance(annotation, type) and issubclass(annotation, Enum) else []


def _schema(option: Any) -> dict[str, Any]:
    if option.is_flag:
        return {"type": "boolean", "default": False}
    schema: dict[str, Any] = {"type": "string"}
    choices = _choices(option)
    if choices:
        schema["enum"] = [getattr(c, "value", c) for c in choices]
    default = getattr(option.default, "value", option.default)
    if default is not None and not callable(default):
        schema["default"] = str(default)
    return schema


def parameters(command: Command, fixed: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One OpenAPI query parameter per field of ``command`` (its help, choices and default), then ``format``."""
    fields = [{"name": name, "in": "query", "required": bool(option.required),
               "description": MODEL_HELP if name == "model" else option.help or "",
               "schema": _schema(option)} for name, option in command.fields.items() if name not in fixed]
    return [*fields, FORMAT_FIELD]
