"""An input refused, located at the request field it came in: the library words it in its fields' names, each
front end in its own (the CLI its flags, `--batch must be positive, got '0'`; the HTTP API its query fields).
`FieldInvalid` itself is defined in `estimator.errors`, so the layers below the request raise it too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from estimator.errors import FieldInvalid, WorkloadInvalid

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = ["FieldInvalid", "FieldsInvalid", "invalid", "located"]  # FieldInvalid lives in estimator.errors
# pydantic's bound failures (error type → the bound's key in its context, the words for it)
_BOUNDS = {"less_than_equal": ("le", "at most"), "less_than": ("lt", "less than"),
           "greater_than_equal": ("ge", "at least"), "greater_than": ("gt", "more than")}


def invalid(field: str, message: str) -> FieldInvalid:
    """A refusal of ``field`` whose message starts with the field's name: ``{field}: message`` (a message from
    below, such as `parse_count`'s, quoted whole)."""
    return FieldInvalid(field, "{" + field + "}: {message}", message=message)


class FieldsInvalid(WorkloadInvalid):
    """Several fields refused at once (unknown, repeated or malformed fields of a query): (field, message) each."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(message for _, message in self.errors))


def located(error: ValidationError, fields: Mapping[str, str]) -> WorkloadInvalid:
    """A model built from request fields (a workload, a plan's goal), refused by pydantic, as a refusal located at
    the request field each failure came from: ``fields`` maps the model's names of the values the request gave to
    the request's (``tensor_parallel`` → ``gpus``), so the HTTP API answers at the field and the CLI names the flag
    (``--batch must be at most 1,000,000, got 100,000,000,000,000,000``). A refusal the model's own check raised
    (a FieldInvalid) is kept; a failure at no given field is pydantic's message whole, unlocated."""
    from estimator.catalog.registry import validation_message

    problems = []
    for item in error.errors():
        found = item.get("ctx", {}).get("error")
        loc = item["loc"]
        if isinstance(found, FieldInvalid):
            problems.append(found)
        elif len(loc) == 1 and loc[0] in fields:
            problems.append(_refused(fields[str(loc[0])], item))
        else:
            return WorkloadInvalid(validation_message(error))
    return problems[0] if len(problems) == 1 else FieldInvalid.joined(problems)


def _refused(field: str, item: Any) -> FieldInvalid:
    """One pydantic failure at ``field``: a bound in the tool's words, anything else in pydantic's."""
    from estimator.units import shown

    value = item.get("input")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 256:
        got = f"{value:,}"
    else:
        got = shown(value) if isinstance(value, (str, int)) else shown(repr(value))
    bound = _BOUNDS.get(item["type"])
    if bound is not None:
        key, words = bound
        limit = item["ctx"][key]
        return FieldInvalid(field, "{" + field + "} must be {words} {limit}, got {got}", words=words,
                            limit=f"{limit:,}" if isinstance(limit, int) else limit, got=got)
    return FieldInvalid(field, "{" + field + "}: {message}", message=str(item["msg"]).removeprefix("Value error, "))
