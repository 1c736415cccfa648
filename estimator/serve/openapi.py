"""The OpenAPI description of a command's fields, read from the request layer's option definitions: the API
documents what it parses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from estimator.request.options import Option
from estimator.serve.fields import fields_of

FORMAT_FIELD: dict[str, Any] = {
    "name": "format", "in": "query", "required": False,
    "description": "json (the default), csv or xlsx; or send Accept: text/csv.",
    "schema": {"type": "string", "enum": ["json", "csv", "xlsx"]}}


MODEL_HELP = ("Catalog name or alias (llama-3.1-8b), Hugging Face Hub id (org/name[@revision]), or a size such as "
              "70b; never a path: POST a config.json as the body instead.")


def _schema(option: Option) -> dict[str, Any]:
    if option.takes in ("flag", "switch"):
        return {"type": "boolean", "default": bool(option.default)}
    schema: dict[str, Any] = {"type": "string"}
    if isinstance(option.takes, type):
        schema["enum"] = [c.value for c in option.takes]
    default = getattr(option.default, "value", option.default)
    if default is not None:
        schema["default"] = str(default)
    return schema


def parameters(command: str, fixed: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One OpenAPI query parameter per field of ``command`` (its help, choices, default and topic: workload,
    hardware, parallelism, training, planning, output), then ``format``."""
    fields = [{"name": name, "in": "query", "required": option.required,
               "description": MODEL_HELP if name == "model" else option.help,
               "schema": _schema(option), "x-topic": option.topic}
              for name, option in fields_of(command).items() if name not in fixed]
    return [*fields, FORMAT_FIELD]
