"""Fuzz-campaign class 'unbounded work': a file the tool reads (a YAML spec, calibration or prices file, a
config.json, a safetensors index, oom's evidence) is refused in one line when it holds more than its stated
ceiling (estimator/catalog/files.py), before it is parsed — and an endless one (/dev/zero) is never read whole."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from estimator.catalog.files import (
    MAX_CONFIG_BYTES,
    MAX_INDEX_BYTES,
    MAX_SPEC_FILE_BYTES,
    read_limited,
    read_yaml,
)
from estimator.catalog.registry import Catalog
from estimator.errors import SpecInvalid
from estimator.live.calibration import load_calibration
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


def _one_line(result: CliResult, text: str) -> None:
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert text in result.stderr


def test_the_ceiling_is_inclusive_and_one_byte_past_it_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(b"a" * 100)
    assert read_limited(path, 100, "file") == b"a" * 100
    with pytest.raises(SpecInvalid, match=r"larger than 99 bytes .*the most a file may hold; refused before parsing"):
        read_limited(path, 99, "file")


def test_an_endless_file_is_refused_without_reading_it_whole() -> None:
    with pytest.raises(SpecInvalid, match="larger than 1,048,576 bytes"):
        read_yaml(Path("/dev/zero"), "prices file")


def test_a_yaml_spec_or_calibration_file_over_1_mib_is_refused(tmp_path: Path) -> None:
    # 1 MiB = 1,048,576 bytes: a comment of that many spaces and a mapping line is past it; 100 bytes fewer is not
    path = tmp_path / "big.yaml"
    path.write_text("#" + " " * MAX_SPEC_FILE_BYTES + "\ngpus: {}\n")
    with pytest.raises(SpecInvalid, match="the most a calibration file may hold"):
        load_calibration(path)
    path.write_text("#" + " " * (MAX_SPEC_FILE_BYTES - 100) + "\ngpus: {}\n")  # under the ceiling: read
    assert load_calibration(path).gpus == {}


def test_a_config_json_over_16_mib_is_refused(catalog: Catalog, tmp_path: Path) -> None:
    config = {"model_type": "llama", "hidden_size": 64, "padding": "x" * MAX_CONFIG_BYTES}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(SpecInvalid, match=r"the most a config\.json may hold"):
        catalog.model(str(path))


def test_a_config_json_of_per_layer_lists_past_1_mib_is_read(catalog: Catalog, tmp_path: Path) -> None:
    # published configs carry per-layer lists and per-module tables (MiniMax-M3's config.json is 3.1 MB): a
    # 3 MB config is read, its unknown keys ignored, its architecture the same as without them
    config = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
              "num_attention_heads": 4, "vocab_size": 256, "padding_table": ["x" * 100] * 30_000}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert path.stat().st_size > 3_000_000
    assert catalog.model(str(path)).arch is not None


def test_a_safetensors_index_over_64_mib_is_refused(tmp_path: Path) -> None:
    from estimator.catalog.checkpoint_files import _shards

    index = tmp_path / "model.safetensors.index.json"
    with index.open("wb") as file:  # sparse: 64 MiB + 1 without writing them
        file.truncate(MAX_INDEX_BYTES + 1)
    with pytest.raises(SpecInvalid, match="the most a safetensors index may hold"):
        _shards(tmp_path)


def test_cli_prices_and_calibration_files_over_the_ceiling_are_one_line(cli: Cli, tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("#" * (MAX_SPEC_FILE_BYTES + 1))
    _one_line(cli("plan", "--model", "llama-3.1-8b", "--concurrency", "8", "--prices", str(big)),
              "the most a prices file may hold")
    _one_line(cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--calibration", str(big)),
              "the most a calibration file may hold")


def test_oom_evidence_is_read_up_to_1_gib(cli: Cli, tmp_path: Path) -> None:
    _one_line(cli("oom", "--from", "/dev/zero"), "/dev/zero: larger than 1 GiB, the most oom reads from one file")
