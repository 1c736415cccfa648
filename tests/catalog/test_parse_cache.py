"""The parsed-spec cache serves exactly what parsing gives, never a stale or unsafe entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from estimator.catalog import parse_cache
from estimator.catalog.files import read_yaml
from estimator.catalog.registry import Catalog


def _counting_parser(calls: list[Path]) -> Any:
    def parse(path: Path) -> Any:
        calls.append(path)
        return read_yaml(path)

    return parse


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", str(folder))
    return folder


def test_second_read_is_served_from_the_cache_and_equal(tmp_path: Path, cache_dir: Path) -> None:
    spec = tmp_path / "a.yaml"
    spec.write_text("name: a\nvalue: 3\nitems: [1, 2.5, x]\n")
    calls: list[Path] = []
    first = parse_cache.parse_all([spec], _counting_parser(calls))
    second = parse_cache.parse_all([spec], _counting_parser(calls))
    assert first == second == [{"name": "a", "value": 3, "items": [1, 2.5, "x"]}]
    assert calls == [spec]  # parsed once
    assert (cache_dir / "parsed-specs.json").is_file()


def test_an_edited_file_is_parsed_again(tmp_path: Path, cache_dir: Path) -> None:
    spec = tmp_path / "a.yaml"
    spec.write_text("value: 1\n")
    calls: list[Path] = []
    parse_cache.parse_all([spec], _counting_parser(calls))
    spec.write_text("value: 2\n")
    assert parse_cache.parse_all([spec], _counting_parser(calls)) == [{"value": 2}]
    assert len(calls) == 2


def test_data_that_json_cannot_carry_is_never_cached(tmp_path: Path, cache_dir: Path) -> None:
    spec = tmp_path / "dated.yaml"
    spec.write_text("released: 2024-03-18\n")  # YAML gives a datetime.date; JSON would give a string
    calls: list[Path] = []
    parse_cache.parse_all([spec], _counting_parser(calls))
    again = parse_cache.parse_all([spec], _counting_parser(calls))
    assert len(calls) == 2
    assert type(again[0]["released"]).__name__ == "date"


def test_a_corrupt_cache_file_is_ignored(tmp_path: Path, cache_dir: Path) -> None:
    cache_dir.mkdir()
    (cache_dir / "parsed-specs.json").write_text("{not json")
    spec = tmp_path / "a.yaml"
    spec.write_text("value: 1\n")
    assert parse_cache.parse_all([spec], read_yaml) == [{"value": 1}]


def test_an_unwritable_cache_folder_only_means_parsing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", str(blocker / "below-a-file"))
    spec = tmp_path / "a.yaml"
    spec.write_text("value: 1\n")
    assert parse_cache.parse_all([spec], read_yaml) == [{"value": 1}]


def test_off_disables_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", "off")
    spec = tmp_path / "a.yaml"
    spec.write_text("value: 1\n")
    calls: list[Path] = []
    parse_cache.parse_all([spec], _counting_parser(calls))
    parse_cache.parse_all([spec], _counting_parser(calls))
    assert len(calls) == 2


def test_the_shipped_catalog_loads_the_same_through_the_cache(cache_dir: Path) -> None:
    cold = Catalog.load()
    warm = Catalog.load()  # every file served from the cache written by the first load
    assert [data for _, data in warm.gpus.entries] == [data for _, data in cold.gpus.entries]
    assert [data for _, data in warm.models.entries] == [data for _, data in cold.models.entries]
    assert warm.models.get("llama-3.1-8b") == cold.models.get("llama-3.1-8b")
