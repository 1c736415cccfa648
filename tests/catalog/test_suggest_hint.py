"""A model the catalog lacks: suggestions of its family (a distill's base family, never its teacher) and size, a
family the catalog has no kin of said as such, and the hint: a Hugging Face id or address is written into the download
address once, a long name is echoed at most 80 characters, and only a size the name carries is offered."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from estimator.catalog.registry import Catalog
from estimator.catalog.suggest import closest_names, hub_id, model_hint, model_suggestions, name_parts, other_families
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


# Suggestions over the shipped catalog, for names it does not hold (held out: none of them is a file or an alias).

Entries = list[tuple[str, Mapping[str, Any]]]


@pytest.fixture(scope="module")
def models(shipped_catalog: Catalog) -> Entries:
    return [(str(data["name"]), data) for _, data in shipped_catalog.models.entries]


def _without(models: Entries, family_start: str) -> Entries:
    """The catalog as if it held no model whose name starts with ``family_start``."""
    return [(name, data) for name, data in models if not name.startswith(family_start)]


def _size(name: str, models: Entries) -> float:
    """A catalog model's size in billions: its name's, else its recorded transformers count."""
    billions = name_parts(name).billions
    return billions if billions is not None else dict(models)[name]["hf_params"] / 1e9


@pytest.mark.parametrize(("wanted", "family", "billions"), [
    ("deepseek-r1-distill-llama-13b", "deepseekr1distillllama", 8.0),  # the same distill family, the nearest size
    ("DeepSeek-R1-Distil-Qwen-40B", "deepseekr1distillqwen", 32.0),  # "distil" misspelt; an org-less Hub name
    ("yi-9b-chat", "yi15", 9.0),  # a kin family (Yi 1.5) of the same size before Yi's own 34B
    ("qwen2.5-coder-3b", "qwen25coder", 1.5),  # 3 is as far from 1.5 as from 6; 7 is further
    ("mistral-small-24b", "mistralnemo", 12.0),  # the same first word: mistral-nemo before mistral-7b
    ("lama-3.1-8b", "llama31", 8.0),  # a misspelt family
    ("qwne3-32b", "qwen3", 32.0),
    ("deepseek-r1:8b", "deepseekr1distillllama", 8.0),  # the teacher's name and a size, as Ollama names the distills
    ("deepseek-r1-600b", "deepseekr1", 671.026404352),  # the teacher itself, sized by its count, for its own size
])
def test_first_suggestion_is_the_family_and_size_the_name_says(models: Entries, wanted: str, family: str,
                                                                billions: float) -> None:
    first = model_suggestions(wanted, models)[0]
    assert (name_parts(first).family, _size(first, models)) == (family, billions)


@pytest.mark.parametrize(("wanted", "base", "billions"), [
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "qwen", 32.0),
    ("DeepSeek-R1-Distill-Llama-70B", "llama", 70.0),
    ("deepseek-r1-distill-llama-13b", "llama", 13.0),
])
def test_a_distill_the_catalog_lacks_gets_its_base_family_never_its_teacher(models: Entries, wanted: str, base: str,
                                                                           billions: float) -> None:
    held_out = _without(models, "deepseek-r1-distill")
    suggested = model_suggestions(wanted, held_out)
    assert suggested and all(name_parts(s).kin.startswith(base) for s in suggested)
    assert not any(s.startswith("deepseek") for s in suggested)  # deepseek-r1 is 671 B, another architecture
    assert _size(suggested[0], held_out) == billions  # its size first: a 32B Qwen, a 70B Llama, Llama 2 13B


def test_a_family_the_catalog_lacks_is_said_and_other_families_are_labelled(models: Entries) -> None:
    held_out = _without(models, "yi-")
    assert model_suggestions("yi-34b", held_out) == []  # no "did you mean": no Yi model is there
    hint = model_hint("yi-34b", held_out)
    assert hint.startswith("no yi model is in the catalog (of other families, about 34B: ")
    listed = hint.split("about 34B: ", 1)[1].split(")", 1)[0]
    others = [s.strip(" '") for s in listed.split(",")]
    assert others == other_families("yi-34b", held_out) and len(others) == 3
    assert all(1 / 1.5 <= _size(o, held_out) / 34 <= 1.5 for o in others)
    assert "qwen3-4b" not in hint and "(--model 34b: a dense model" in hint


def test_unknown_family_of_a_size_no_model_comes_near_says_there_is_none(models: Entries) -> None:
    hint = model_hint("internlm2-5000b", models)
    assert hint.startswith("no internlm2 model is in the catalog, nor one of another family of about 5000B; ")
    assert "--model 5000b" in hint


def test_a_zero_size_in_a_name_lists_no_other_family(models: Entries) -> None:
    hint = model_hint("internlm2-0b", models)
    assert other_families("internlm2-0b", models) == [] and hint.startswith("give") and "--model COUNT" in hint


def test_only_a_size_the_name_carries_is_offered(models: Entries) -> None:
    assert "--model 20b" in model_hint("internlm2-20b", models)
    assert "--model 1.5b" in model_hint("rwkv-7-1.5b", models)
    hint = model_hint("some-model", models)  # no size in it: none is made up, and no family is declared missing
    assert re.search(r"--model \d", hint) is None and "--model COUNT" in hint and "catalog" not in hint


def test_a_dense_name_ranks_the_dense_model_above_the_moe_of_a_nearer_size(models: Entries) -> None:
    suggested = model_suggestions("qwen3-31b", models, count=10)
    # 31 is nearer 30 (the MoE) than 32 by size alone; the dense 32B still comes first
    assert suggested[0] == "qwen3-32b" and "qwen3-30b-a3b" in suggested
    assert suggested.index("qwen3-32b") < suggested.index("qwen3-30b-a3b")


@pytest.mark.parametrize(("name", "family", "billions", "kin", "teacher"), [
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "deepseekr1distillqwen", 32.0, "qwen", "deepseekr1"),
    ("r1-distilled-llama-8b", "r1distilledllama", 8.0, "llama", "r1"),
    ("qwen2.5-coder-7b", "qwen25coder", 7.0, "qwen25coder", ""),
    ("distill-7b", "distill", 7.0, "distill", ""),  # no teacher and no base: the word is the name
])
def test_name_parts_of_a_distill_name_its_base_as_kin(name: str, family: str, billions: float, kin: str,
                                                     teacher: str) -> None:
    parts = name_parts(name)
    assert (parts.family, parts.billions, parts.kin, parts.teacher) == (family, billions, kin, teacher)
