"""A pydantic validation error worded as one line in the tool's own terms.

pydantic words a failure for a programmer (``Input should be a valid number``, ``Value error, …``, an input's
Python type); a user who wrote a spec, calibration or prices file, or a request, reads which key is wrong and what
it must be instead: ``gpus.h100.usd is empty``, ``bandwidth_gb_per_s must be a number, got 'fast'``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from estimator.errors import ECHO_MAX, echoed

ECHO = ECHO_MAX  # the most characters of a user's input a message repeats (estimator.errors)

# pydantic's error types, by what they ask for: the phrase after "must be"
_WANTS = {
    "float_type": "a number", "float_parsing": "a number", "int_type": "a whole number",
    "int_parsing": "a whole number", "int_from_float": "a whole number", "bool_type": "true or false",
    "bool_parsing": "true or false", "string_type": "text", "dict_type": "a mapping of keys",
    "model_type": "a mapping of keys", "model_attributes_type": "a mapping of keys", "list_type": "a list",
    "tuple_type": "a list", "set_type": "a list", "frozen_set_type": "a list", "finite_number": "a finite number",
}
_CUSTOM = ("Value error, ", "Assertion failed, ")  # the prefixes pydantic puts before a validator's own message


def echo(value: Any) -> str:
    """A user's input as a message repeats it: quoted, at most `ECHO` characters."""
    return echoed(repr(value) if isinstance(value, str) else str(value))


def _worded(item: Any) -> str:
    """One failure: "where must be what, got what" (or "is empty", "is missing", "is not a known key")."""
    kind, given, text = str(item.get("type", "")), item.get("input"), str(item.get("msg", ""))
    for prefix in _CUSTOM:
        text = text.replace(prefix, "")
    if kind in ("value_error", "assertion_error"):
        return text
    if kind == "missing":
        return "is missing"
    if kind == "extra_forbidden":
        return "is not a known key"
    if given is None or (isinstance(given, str) and not given.strip() and kind != "string_too_short"):
        return "is empty"
    wants = _WANTS.get(kind)
    if wants is not None:
        return f"must be {wants}, got {echo(given)}"
    return text.replace("Input should be", "must be").replace("String should", "must")


def validation_message(error: ValidationError) -> str:
    """All of a pydantic error's failures on one line, each at its dotted location."""
    parts = []
    for item in error.errors():
        location = ".".join(str(p) for p in item["loc"])
        message = _worded(item)
        if not location:
            parts.append(message)
        elif message.startswith(("is ", "must ")):
            parts.append(f"{location} {message}")
        else:
            parts.append(f"{location}: {message}")
    return "; ".join(parts)
