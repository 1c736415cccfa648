"""A user's specs folder adds to the packaged catalog, file by file, instead of replacing it: one card in a folder
is one more card (`--specs-dir`, and ``<user config dir>/estimator/specs``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from estimator.catalog.files import default_specs_dir
from estimator.catalog.registry import default_catalog
from estimator.request.estimate import catalog_for
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
H100 = default_specs_dir() / "gpus" / "nvidia-h100-sxm5.yaml"


def _card(folder: Path, file: str, text: str) -> Path:
    (folder / "gpus").mkdir(parents=True, exist_ok=True)
    path = folder / "gpus" / file
    path.write_text(text, encoding="utf-8")
    return path


def _renamed(name: str, aliases: str, memory_mib: int = 81_559) -> str:
    text = H100.read_text(encoding="utf-8")
    text = text.replace("name: NVIDIA H100 SXM5 80GB", f"name: {name}")
    text = text.replace("reported_memory_mib: 81559", f"reported_memory_mib: {memory_mib}")
    return text.replace(text.splitlines()[1], f"aliases: [{aliases}]")


def _capacity(cli: Cli, *args: str) -> int:
    result = cli("--model", "gpt2", *args, "--format", "json", entry="estimate")
    assert result.exit_code == 0, result.stderr
    return int(json.loads(result.stdout)["gpu"]["memory_bytes"])


def test_a_folder_with_one_card_adds_it_to_the_shipped_catalog(cli: Cli, tmp_path: Path) -> None:
    _card(tmp_path, "lab-card.yaml", _renamed("Lab Card 80GB", "lab-card", memory_mib=80_000))
    assert _capacity(cli, "--gpu", "lab-card", "--specs-dir", str(tmp_path)) == 80_000 * 2**20
    assert _capacity(cli, "--gpu", "h100", "--specs-dir", str(tmp_path)) == 81_559 * 2**20
    catalog = catalog_for(tmp_path)
    assert len(catalog.gpus) == len(default_catalog().gpus) + 1


def test_a_file_of_the_same_name_replaces_the_shipped_one(cli: Cli, tmp_path: Path) -> None:
    _card(tmp_path, H100.name, H100.read_text(encoding="utf-8").replace("81559", "80000"))
    assert _capacity(cli, "--gpu", "h100", "--specs-dir", str(tmp_path)) == 80_000 * 2**20
    assert len(catalog_for(tmp_path).gpus) == len(default_catalog().gpus)


def test_a_new_file_that_reuses_a_shipped_alias_is_one_line(cli: Cli, tmp_path: Path) -> None:
    path = _card(tmp_path, "my-h100.yaml", _renamed("My H100", "h100"))
    result = cli("--model", "gpt2", "--gpu", "h100", "--specs-dir", str(tmp_path), entry="estimate")
    assert result.exit_code != 0 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "used twice" in result.stderr and str(path) in result.stderr


def test_a_missing_specs_folder_is_one_line(cli: Cli, tmp_path: Path) -> None:
    result = cli("--model", "gpt2", "--gpu", "h100", "--specs-dir", str(tmp_path / "nope"), entry="estimate")
    assert result.exit_code != 0 and "specs folder not found" in result.stderr


def test_the_user_specs_folder_is_laid_over_the_catalog(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ESTIMATOR_NO_USER_SPECS", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    _card(tmp_path / "estimator" / "specs", "home-card.yaml", _renamed("Home Card", "home-card"))
    assert catalog_for(None).gpus.get("home-card").name == "Home Card"
    monkeypatch.setenv("ESTIMATOR_NO_USER_SPECS", "1")
    assert catalog_for(None) is default_catalog()


def test_costs_come_from_the_last_folder_that_has_them(tmp_path: Path) -> None:
    (tmp_path / "gpus").mkdir()
    assert catalog_for(tmp_path).file("costs.yaml") == default_specs_dir() / "costs.yaml"
    (tmp_path / "costs.yaml").write_text("{}\n", encoding="utf-8")
    assert catalog_for(tmp_path).file("costs.yaml") == tmp_path / "costs.yaml"


@pytest.mark.parametrize(("gpu", "name", "mib"), [
    ("a800", "NVIDIA A800 SXM4 80GB", 81_920),
    ("NVIDIA A800-SXM4-80GB", "NVIDIA A800 SXM4 80GB", 81_920),
    ("h800", "NVIDIA H800 SXM5 80GB", 81_920),
    ("4090d", "NVIDIA GeForce RTX 4090 D 24GB", 24_564),
    ("4090-48gb", "NVIDIA GeForce RTX 4090 48GB (modified)", 49_152),
    ("h20-141gb", "NVIDIA H20 141GB", 144_384),
    ("b300", "NVIDIA B300 288GB", 275_040),
    ("gb300", "NVIDIA GB300 (per Blackwell Ultra GPU, NVL72)", 284_208),
    ("l20", "NVIDIA L20 48GB", 46_068),
    ("tpu-v5p", "Google TPU v5p", 97_280),
])
def test_cards_people_ask_for(gpu: str, name: str, mib: int) -> None:
    """Each resolves by the names people type and nvidia-smi prints; its usable memory is the device's report
    (MiB) where one is on record, else the installed GiB (the spec file's notes and sources say which)."""
    spec = default_catalog().gpus.get(gpu)
    assert (spec.name, spec.memory_bytes) == (name, mib * 2**20)
