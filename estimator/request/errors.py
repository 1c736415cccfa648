"""An input refused, located at the request field it came in: the library words it in its fields' names, each
front end in its own (the CLI its flags, `--batch must be positive, got '0'`; the HTTP API its query fields).
`FieldInvalid` itself is defined in `estimator.errors`, so the layers below the request raise it too."""

from __future__ import annotations

from estimator.errors import FieldInvalid, WorkloadInvalid

__all__ = ["FieldInvalid", "FieldsInvalid", "invalid"]  # FieldInvalid lives in estimator.errors: the library raises it


def invalid(field: str, message: str) -> FieldInvalid:
    """A refusal of ``field`` whose message starts with the field's name: ``{field}: message`` (a message from
    below, such as `parse_count`'s, quoted whole)."""
    return FieldInvalid(field, "{" + field + "}: {message}", message=message)


class FieldsInvalid(WorkloadInvalid):
    """Several fields refused at once (unknown, repeated or malformed fields of a query): (field, message) each."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(message for _, message in self.errors))
