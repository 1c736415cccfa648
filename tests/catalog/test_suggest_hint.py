"""The hint for a model the catalog lacks: a Hugging Face id or address is written into the download address once,
and a long name is echoed at most 80 characters."""

from __future__ import annotations

import pytest

from estimator.catalog.suggest import closest_names, hub_id, model_hint
from estimator.errors import ECHO_MAX, SpecNotFound


@pytest.mark.parametrize("name", ["https://huggingface.co/org/name", "http://hf.co/org/name",
                                  "huggingface.co/org/name/tree/main", "https://huggingface.co/org/name/blob/main/"
                                  "config.json", "org/name"])
def test_a_hub_address_given_as_a_model_is_written_once_in_the_download_hint(name: str) -> None:
    hint = model_hint(name)
    assert "https://huggingface.co/org/name/blob/main/config.json" in hint
    assert hint.count("huggingface.co") == 1 and hint.count("http") == 1


def test_an_address_of_another_site_gets_no_hub_address() -> None:
    assert hub_id("https://example.com/org/name") is None
    assert "huggingface.co" not in model_hint("https://example.com/org/name")


def test_a_long_model_name_is_echoed_at_most_80_characters() -> None:
    line = str(SpecNotFound("model", "q" * 5000, (), model_hint("q" * 5000)))
    assert "'" + "q" * (ECHO_MAX - 1) + "…'" in line and len(line) <= 400
    hub = str(SpecNotFound("model", "org/" + "q" * 5000, (), model_hint("org/" + "q" * 5000)))
    assert len(hub) <= 400 and "\n" not in hub


def test_closest_names_come_first_and_stop_at_the_count() -> None:
    assert closest_names("mamba", ["mistral", "llama", "gemma", "bert"], count=2) == ["llama", "gemma"]
