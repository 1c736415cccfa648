"""The built-spec cache serves exactly what building gives, and a stale, corrupt or foreign entry never."""

from __future__ import annotations

import os
import pickle
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog import built_cache, registry
from estimator.catalog.architecture import ModelSpec
from estimator.catalog.registry import Catalog
from estimator.catalog.specs import GpuSpec
from tests.conftest import TEST_CATALOG


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own, and no cache file held open from another test (a new process each)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", str(folder))
    monkeypatch.setattr(built_cache, "_opened", {})
    return folder


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a new process sees: the cache as written to disk, nothing held in memory."""
    for cache in built_cache._opened.values():
        cache.save()
    monkeypatch.setattr(built_cache, "_opened", {})


def _the_file(folder: Path) -> Path:
    """The one cache file in ``folder``."""
    (file,) = folder.glob("built-specs-*.pickle")
    return file


def _counting_builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every model build, by file name."""
    built: list[str] = []
    real = registry.model_from_mapping

    def counting(data: Any, path: Path) -> ModelSpec:
        built.append(path.name)
        return real(data, path)

    monkeypatch.setattr(registry, "model_from_mapping", counting)
    return built


def _every_spec(catalog: Catalog) -> list[Any]:
    return [*catalog.gpus, *catalog.models, *catalog.formats, *catalog.profiles, *catalog.systems]


def test_a_second_start_is_served_from_the_cache_and_equal(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = _counting_builds(monkeypatch)
    cold = _every_spec(Catalog.load(TEST_CATALOG))
    assert len(built) == len(list(TEST_CATALOG.glob("models/*.yaml"))) == 9  # the tiny catalog's nine models
    _new_process(monkeypatch)
    built = _counting_builds(monkeypatch)
    warm = _every_spec(Catalog.load(TEST_CATALOG))
    assert built == []  # nothing built again
    assert warm == cold and [type(w) for w in warm] == [type(c) for c in cold]
    assert [w.model_dump(mode="json") for w in warm] == [c.model_dump(mode="json") for c in cold]


def test_the_shipped_catalog_estimates_the_same_through_the_cache(cache_dir: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    cold = _every_spec(Catalog.load())
    _new_process(monkeypatch)
    warm = _every_spec(Catalog.load())
    assert warm == cold
    assert (_the_file(cache_dir)).is_file()


def _copy_catalog(tmp_path: Path) -> Path:
    root = tmp_path / "specs"
    shutil.copytree(TEST_CATALOG, root)
    return root


def test_an_edited_file_is_built_again(cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy_catalog(tmp_path)
    name = Catalog.load(root).gpus.get("h100").name
    _new_process(monkeypatch)
    spec = next(p for p in (root / "gpus").glob("*.yaml") if "name: " + name in p.read_text())
    spec.write_text(spec.read_text().replace("name: " + name, "name: Edited H100"))
    assert Catalog.load(root).gpus.get("h100").name == "Edited H100"


def test_a_changed_signature_drops_every_entry(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Catalog.load(TEST_CATALOG).gpus.get("h100")
    _new_process(monkeypatch)
    monkeypatch.setattr(built_cache, "signature", lambda package, families: "another reader")
    built = _counting_builds(monkeypatch)
    Catalog.load(TEST_CATALOG).models.get("llama-3.1-8b")
    assert built == ["llama-3.1-8b.yaml"]


def test_two_signatures_sharing_a_folder_keep_their_own_files(cache_dir: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # two installs of different versions (or two checkouts) started in turn, each twice: each builds once
    for sig in ("version one", "version two"):
        monkeypatch.setattr(built_cache, "signature", lambda package, families, sig=sig: sig)
        Catalog.load(TEST_CATALOG).models.get("llama-3.1-8b")
        _new_process(monkeypatch)
    built = _counting_builds(monkeypatch)
    for sig in ("version one", "version two"):
        monkeypatch.setattr(built_cache, "signature", lambda package, families, sig=sig: sig)
        Catalog.load(TEST_CATALOG).models.get("llama-3.1-8b")
        _new_process(monkeypatch)
    assert built == []
    assert len(list(cache_dir.glob("built-specs-*.pickle"))) == 2


def test_the_files_of_other_signatures_are_pruned_to_the_newest(cache_dir: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    cache_dir.mkdir()
    (cache_dir / "built-specs.pickle").write_bytes(b"what an earlier version wrote")
    (cache_dir / "parsed-specs.json").write_text("{}")  # not this cache's: kept
    past = time.time() - 1000
    os.utime(cache_dir / "built-specs.pickle", (past, past))
    for n in range(built_cache._KEEP + 3):
        monkeypatch.setattr(built_cache, "signature", lambda package, families, n=n: f"signature {n}")
        Catalog.load(TEST_CATALOG).gpus.get("h100")
        _new_process(monkeypatch)
        written = built_cache.cache_file(cache_dir, f"signature {n}")
        os.utime(written, (past + n + 1, past + n + 1))  # in order even where the clock's tick is coarse
    kept = sorted(f.name for f in cache_dir.glob("built-specs*.pickle"))
    newest = range(3 - 1, built_cache._KEEP + 3)  # the last _KEEP + 1 written
    assert kept == sorted(built_cache.cache_file(cache_dir, f"signature {n}").name for n in newest)
    assert (cache_dir / "parsed-specs.json").is_file()


def test_the_signature_follows_the_catalog_source_the_families_and_the_version(tmp_path: Path) -> None:
    package, families = tmp_path / "estimator", tmp_path / "families"
    for folder in (package / "catalog", package / "notes", families):
        folder.mkdir(parents=True)
    for name in ("__init__.py", "errors.py", "units.py", "report.py", "catalog/registry.py", "notes/__init__.py"):
        (package / name).write_text("x = 1\n")
    (families / "llama.yaml").write_text("a: 1\n")
    first = built_cache.signature(package, families)
    (package / "catalog" / "registry.py").write_text("x = 2\n")
    second = built_cache.signature(package, families)
    (families / "llama.yaml").write_text("a: 2\n")
    third = built_cache.signature(package, families)
    (package / "__init__.py").write_text('__version__ = "0.2.0"\n')
    fourth = built_cache.signature(package, families)
    assert len({first, second, third, fourth}) == 4


@pytest.mark.parametrize("damage", [b"", b"not a pickle", b"\x80\x05garbage", None])
def test_a_corrupt_cache_file_is_ignored(cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                         damage: bytes | None) -> None:
    cold = Catalog.load(TEST_CATALOG).gpus.get("h100")
    _new_process(monkeypatch)
    file = _the_file(cache_dir)
    file.write_bytes(file.read_bytes()[:200] if damage is None else damage)  # None: truncated
    assert Catalog.load(TEST_CATALOG).gpus.get("h100") == cold


def _entries(file: Path) -> dict[str, Any]:
    with file.open("rb") as handle:
        data: dict[str, Any] = pickle.load(handle)
    return data


def _rewrite(file: Path, change: Any) -> None:
    data = _entries(file)
    data["entries"] = {key: change(value) for key, value in data["entries"].items()}
    file.write_bytes(pickle.dumps(data))


class Foreign:
    """Not a catalog type: the unpickler must refuse to resolve it."""


def test_a_foreign_or_wrong_class_entry_is_refused(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = Catalog.load(TEST_CATALOG)
    cold, model = catalog.gpus.get("h100"), catalog.models.get("llama-3.1-8b")
    _new_process(monkeypatch)
    file = _the_file(cache_dir)
    _rewrite(file, lambda _: pickle.dumps(Foreign()))
    warm = Catalog.load(TEST_CATALOG)
    assert warm.gpus.get("h100") == cold and isinstance(warm.gpus.get("h100"), GpuSpec)
    _new_process(monkeypatch)
    _rewrite(file, lambda _: pickle.dumps(model))  # every entry a model: right package, wrong class for a GPU
    assert Catalog.load(TEST_CATALOG).gpus.get("h100") == cold
    with pytest.raises(pickle.UnpicklingError, match="not a catalog type"):
        built_cache._loads(pickle.dumps(Foreign()))


def test_off_keeps_no_built_specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", "off")
    monkeypatch.setattr(built_cache, "_opened", {})
    built = _counting_builds(monkeypatch)
    Catalog.load(TEST_CATALOG).models.get("llama-3.1-8b")
    Catalog.load(TEST_CATALOG).models.get("llama-3.1-8b")
    assert built == ["llama-3.1-8b.yaml", "llama-3.1-8b.yaml"]
    assert built_cache._opened == {}


def test_an_unwritable_cache_folder_only_means_building(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", str(blocker / "below-a-file"))
    monkeypatch.setattr(built_cache, "_opened", {})
    spec = Catalog.load(TEST_CATALOG).gpus.get("h100")
    _new_process(monkeypatch)  # the save fails quietly
    assert Catalog.load(TEST_CATALOG).gpus.get("h100") == spec


def test_a_cache_grown_past_its_ceiling_starts_afresh(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(built_cache, "_MAX_ENTRIES", 3)
    catalog = Catalog.load(TEST_CATALOG)
    gpus = list(catalog.gpus)  # the tiny catalog's seven cards: the entries are cleared twice on the way
    (cache,) = built_cache._opened.values()
    assert len(cache.entries) == 7 - 2 * 3 == 1
    _new_process(monkeypatch)
    assert list(Catalog.load(TEST_CATALOG).gpus) == gpus
