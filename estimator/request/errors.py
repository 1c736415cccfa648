"""An input refused, located at the request field it came in: the library words it in its fields' names, each
front end in its own (the CLI its flags, `--batch must be positive, got '0'`; the HTTP API its query fields)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from estimator.errors import WorkloadInvalid

_FIELD = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


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


_FLAG = re.compile(r"--([a-z][a-z0-9-]*)")


def in_fields(message: str, field_of_flag: Callable[[str], str | None]) -> FieldInvalid | None:
    """A message from below the request layer that names options by their flags (``--ep 4 does not divide ...``)
    as a FieldInvalid: each flag that is an option becomes its field (the first one is the field it is about), the
    rest of the text is kept as it is. None when it names no option."""
    parts = _FLAG.split(message)  # text, flag, text, flag, ..., text
    fields = [field_of_flag("--" + flag) for flag in parts[1::2]]
    if not any(fields):
        return None
    template, values = [], {}
    for index, part in enumerate(parts):
        field = fields[index // 2] if index % 2 else None
        if field is not None:
            template.append("{" + field + "}")
        else:
            values[f"t{index}"] = part if index % 2 == 0 else "--" + part
            template.append("{" + f"t{index}" + "}")
    return FieldInvalid(next(f for f in fields if f), "".join(template), **values)


def invalid(field: str, message: str) -> FieldInvalid:
    """A refusal of ``field`` whose message starts with the field's name: ``{field}: message`` (a message from
    below, such as `parse_count`'s, quoted whole)."""
    return FieldInvalid(field, "{" + field + "}: {message}", message=message)


class FieldsInvalid(WorkloadInvalid):
    """Several fields refused at once (unknown, repeated or malformed fields of a query): (field, message) each."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(message for _, message in self.errors))
