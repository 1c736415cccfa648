"""An input refused, located at the request field it came in: the library words it in its fields' names, each
front end in its own (the CLI its flags, `--batch must be positive, got '0'`; the HTTP API its query fields)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from estimator.errors import WorkloadInvalid

_FIELD = re.compile(r"\{([a-z_]+)\}")


class FieldInvalid(WorkloadInvalid):
    """``field``'s value cannot be used. ``template`` names fields in braces (``{batch} must be positive, got
    {value}``); ``values`` fill the other braces, already worded (quoted where a user's text is shown)."""

    def __init__(self, field: str, template: str, **values: Any) -> None:
        self.field = field
        self.template = template
        self.values = {key: str(value) for key, value in values.items()}
        super().__init__(self.worded(lambda name: name))

    def worded(self, name_of: Callable[[str], str]) -> str:
        """The message with every field named by ``name_of`` (the CLI passes the field's flag)."""
        return _FIELD.sub(lambda m: self.values[m.group(1)] if m.group(1) in self.values else name_of(m.group(1)),
                          self.template)

    def __str__(self) -> str:
        return self.worded(lambda name: name)


def invalid(field: str, message: str) -> FieldInvalid:
    """A refusal of ``field`` whose message starts with the field's name: ``{field}: message`` (a message from
    below, such as `parse_count`'s, quoted whole)."""
    return FieldInvalid(field, "{" + field + "}: {message}", message=message)


class FieldsInvalid(WorkloadInvalid):
    """Several fields refused at once (unknown, repeated or malformed fields of a query): (field, message) each."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(message for _, message in self.errors))
