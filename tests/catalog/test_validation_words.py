"""A pydantic failure worded in the tool's terms (estimator/catalog/validation_words.py): each failure at its dotted
location, saying what the value must be, echoing at most 80 characters of it, never pydantic's own phrasing."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from estimator.catalog.validation_words import ECHO, echo, validation_message


class _Card(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str
    memory_gb: float = Field(gt=0)
    count: int = 1
    links: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> _Card:
        if self.name == "bad":
            raise ValueError("a card named 'bad' is refused")
        return self


def _message(**data: object) -> str:
    with pytest.raises(ValidationError) as error:
        _Card.model_validate(data)
    return validation_message(error.value)


@pytest.mark.parametrize(("data", "words"), [
    ({"name": "x", "memory_gb": None}, "memory_gb is empty"),
    ({"name": "x", "memory_gb": "  "}, "memory_gb is empty"),
    ({"name": "x"}, "memory_gb is missing"),
    ({"name": "x", "memory_gb": 1, "colour": "red"}, "colour is not a known key"),
    ({"name": "x", "memory_gb": "fast"}, "memory_gb must be a number, got 'fast'"),
    ({"name": "x", "memory_gb": 1, "count": 1.5}, "count must be a whole number, got 1.5"),
    ({"name": "x", "memory_gb": -1}, "memory_gb must be greater than 0"),
    ({"name": "x", "memory_gb": float("inf")}, "memory_gb must be a finite number, got inf"),
    ({"name": "x", "memory_gb": 1, "links": {"nvlink": None}}, "links.nvlink is empty"),
    ({"name": "x", "memory_gb": 1, "links": [1]}, "links must be a mapping of keys, got [1]"),
    ({"name": "bad", "memory_gb": 1}, "a card named 'bad' is refused"),
    ({"name": None, "memory_gb": None}, "name is empty; memory_gb is empty"),
])
def test_each_failure_is_worded_in_the_tools_terms(data: dict[str, object], words: str) -> None:
    message = _message(**data)
    assert message == words
    for leaked in ("NoneType", "Value error", "Input should", "Field required", "Extra inputs", ": :"):
        assert leaked not in message


def test_an_echoed_input_is_cut_at_80_characters() -> None:
    message = _message(name="x", memory_gb="9" * 400 + "x")
    assert message == f"memory_gb must be a number, got {echo('9' * 400 + 'x')}"
    assert len(echo("9" * 400)) == ECHO == 80 and echo("9" * 400).endswith("…")
    assert echo("short") == "'short'"
