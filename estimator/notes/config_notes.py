"""The warnings of how a config.json was read (estimator/catalog/config_fields.py): unread fields whose names say
they may shape the model, and the defaults filled in for fields the config leaves out."""

from __future__ import annotations

from collections.abc import Sequence

from estimator.notes import Note, NoteCode, note


def config_notes(model: str, unread: Sequence[str], defaulted: Sequence[str]) -> list[Note]:
    """One warning naming the unread fields, one naming the defaults filled in; none where there are none."""
    pairs = ((NoteCode.UNREAD_FIELDS, unread), (NoteCode.DEFAULTED_FIELDS, defaulted))
    return [note(code, model=model, fields=", ".join(fields)) for code, fields in pairs if fields]
