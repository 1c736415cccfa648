"""Words → option values, by the definitions of `estimator.request.options`: a command line (`parse`, the
`estimate` script's parser, no typer imported) or a query's fields (`parse_fields`, the HTTP API's). Each gives
every option of the command its value as the typer command would (defaults filled in); `convert` then types them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

from estimator.request.errors import FieldInvalid, FieldsInvalid
from estimator.request.options import Option, options_of

_DIGITS = re.compile(r"[0-9]{1,18}")
_UNPARSED = object()
TRUE, FALSE = ("true", "1", "yes", "on", ""), ("false", "0", "no", "off")


def _convert(option: Option, value: str) -> Any:
    """The value as the typer option converts it, or `_UNPARSED` where typer is to decide (or refuse)."""
    if not value or value.startswith("-") or "\x00" in value:
        return _UNPARSED  # a value that looks like an option, or none: typer's rules, typer's message
    if option.takes == "text":
        return value
    if option.takes == "int":
        return int(value) if _DIGITS.fullmatch(value) else _UNPARSED
    if option.takes == "path":
        return Path(value)
    if isinstance(option.takes, type):
        return next((choice for choice in option.takes if choice.value == value), _UNPARSED)
    return _UNPARSED


def parse(command: str, args: Sequence[str]) -> tuple[dict[str, Any], list[str]] | None:
    """(field → value as typer gives it, the fields given in command-line order) for a plain command line: every
    word a known option, ``--name VALUE`` or ``--name=VALUE``, each once, every value one its option takes as it
    is. None for anything else (``--help``, a usage error...): typer then parses it, with typer's words."""
    options = options_of(command)
    by_flag = {flag: o for o in options for flag in o.flags if o.takes not in ("switch", "texts")}
    given: dict[str, Any] = {}
    words = list(args)
    while words:
        word = words.pop(0)
        flag, equals, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        option = by_flag.get(flag)
        if option is None or option.name in given:
            return None
        if option.takes == "flag":
            if equals:
                return None
            given[option.name] = True
            continue
        if not equals:
            if not words:
                return None
            inline = words.pop(0)
        value = _convert(option, inline)
        if value is _UNPARSED:
            return None
        given[option.name] = value
    if any(o.required and o.name not in given for o in options):
        return None
    return {o.name: given.get(o.name, o.default) for o in options}, list(given)


def _field_value(option: Option, key: str, value: str) -> Any:
    """A query field's text as its option's value; FieldInvalid when it is not one."""
    if option.takes in ("flag", "switch"):
        word = value.strip().lower()
        if word not in (*TRUE, *FALSE):
            raise FieldInvalid(option.name, "{key} is true or false, got {value}", key=key, value=repr(value))
        return word in TRUE
    if option.takes == "int":
        try:
            return int(value.strip())
        except ValueError:
            raise FieldInvalid(option.name, "{" + option.name + "} {value} is not a whole number",
                               value=repr(value)) from None
    if isinstance(option.takes, type) and issubclass(option.takes, Enum):
        found = next((c for c in option.takes if c.value == value), None)
        if found is None:
            names = ", ".join(repr(c.value) for c in option.takes)
            raise FieldInvalid(option.name, "{" + option.name + "} {value} is not one of {names}",
                               value=repr(value), names=names)
        return found
    return [value] if option.takes == "texts" else value


def parse_fields(command: str, query: Iterable[tuple[str, str]], fixed: Mapping[str, str] | None = None,
                 hidden: frozenset[str] = frozenset(), reserved: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The command's option values for a query's fields (``prompt_tokens`` or ``prompt-tokens``), defaults filled
    in; ``fixed`` fields are set by the caller and refused from the query, ``hidden`` ones are no fields at all,
    ``reserved`` ones are the caller's own and skipped. Every unknown, repeated or malformed field is named at
    once (`FieldsInvalid`)."""
    fixed = dict(fixed or {})
    options = {o.name: o for o in options_of(command) if o.name not in hidden}
    errors: list[tuple[str, str]] = []
    values: dict[str, Any] = {}
    for key, value in [*fixed.items(), *query]:
        name = key.replace("-", "_")
        option = options.get(name)
        if name in reserved:
            continue
        if option is None or (name in fixed and name in values):
            known = ", ".join(sorted(n for n in options if n not in fixed))
            errors.append((key, f"{key!r} is not a field of {command}; fields: {known}"))
        elif name in values:
            errors.append((key, f"{key!r} is given more than once"))
        else:
            try:
                values[name] = _field_value(option, key, value)
            except FieldInvalid as error:
                errors.append((key, error.worded(lambda field: options[field].flag)))
                values[name] = None
    missing = [o for o in options.values() if o.required and o.name not in values]
    errors += [(o.name, f"Missing option '{o.flag}'.") for o in missing]
    if errors:
        raise FieldsInvalid(errors)
    return {o.name: values.get(o.name, o.default) for o in options_of(command)}  # hidden ones at their defaults
