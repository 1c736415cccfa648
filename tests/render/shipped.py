"""A JSON Schema shipped in docs/schema: equal to the generated one (rewritten first under ``--update-schema``)."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator


def assert_shipped_schema(path: Path, text: str, update_schema: bool) -> None:
    """``path`` holds ``text`` (a valid JSON Schema); with ``update_schema`` it is written first."""
    if update_schema:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run pytest --update-schema"
    assert path.read_text(encoding="utf-8") == text, "run pytest --update-schema and review the diff"
    Draft202012Validator.check_schema(json.loads(path.read_text(encoding="utf-8")))
