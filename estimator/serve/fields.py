"""A request's query fields → a command's option values, read by the request layer's option definitions.

Each field is the CLI option of the same name (``prompt_tokens`` or ``prompt-tokens`` is ``--prompt-tokens``), so
defaults, choices and every check are the command's: a request and ``estimate ...`` cannot disagree. Options that
name files on the server (specs, calibration, prices, outputs, charts) or shape a terminal's output are not fields.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from estimator.request.errors import FieldsInvalid
from estimator.request.options import Option, options_of
from estimator.request.words import parse_fields

# Never read from a request: each names a file or folder on the server, or a terminal's rendering. The API's own
# `format` field picks JSON, CSV or XLSX.
SERVER_ONLY = frozenset({"specs_dir", "calibration", "plot", "output", "prices", "output_format", "units", "explain",
                         "progress", "force"})
RESERVED = frozenset({"format"})
MAX_QUERY_CHARS = 4096  # a share link of every field is under 1,000 characters; a request past this is refused


class RequestInvalid(FieldsInvalid):
    """Bad fields: (field, message) for each, answered as HTTP 422."""


def fields_of(command: str) -> dict[str, Option]:
    """The request fields of ``command``: its options, less those of the server's own (`SERVER_ONLY`)."""
    return {o.name: o for o in options_of(command) if o.name not in SERVER_ONLY}


def parse(command: str, query: Iterable[tuple[str, str]], fixed: dict[str, str] | None = None) -> dict[str, Any]:
    """The command's option values (field → value, defaults filled in) for a query; ``fixed`` fields are set by
    the endpoint (``mode=train`` for /v1/train) and refused from the query."""
    try:
        return parse_fields(command, query, fixed, hidden=SERVER_ONLY, reserved=RESERVED)
    except FieldsInvalid as error:
        raise RequestInvalid(error.errors) from None
