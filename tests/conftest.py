"""Shared fixtures: the packaged catalog, workloads, and an in-process CLI runner."""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from estimator import InferenceWorkload
from estimator.catalog.registry import Catalog, default_catalog
from estimator.cli.estimate import estimate_main
from estimator.cli.main import main

DATA = Path(__file__).resolve().parent / "data"
REFERENCE = DATA / "measured/reference/h200-measured.jsonl"
GOLDEN = DATA / "golden"


def pytest_configure(config: pytest.Config) -> None:
    """Tests never write to the user's cache folder: the parsed-spec cache goes to a folder of the run's own."""
    del config
    if "ESTIMATOR_CACHE_DIR" not in os.environ:
        os.environ["ESTIMATOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="estimator-test-cache-")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/data/golden/* from current output")


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return default_catalog()


@pytest.fixture(scope="session")
def make_workload(catalog: Catalog) -> Callable[..., InferenceWorkload]:
    def make(dtype: str = "bf16", kv: str = "bf16", profile: str = "optimized", **fields: object) -> InferenceWorkload:
        return InferenceWorkload(weight_format=catalog.formats.get(dtype), kv_format=catalog.formats.get(kv),
                                 profile=catalog.profiles.get(profile), **fields)

    return make


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """Run `estimator ARGS` (or `estimate ARGS` with entry='estimate') in-process, capturing both streams, in a
    terminal ``columns`` wide."""

    def invoke(*args: str, entry: str = "estimator", columns: int = 120) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr("sys.stdout", out)
        monkeypatch.setattr("sys.stderr", err)
        monkeypatch.setattr("sys.argv", [entry, *args])
        monkeypatch.setenv("COLUMNS", str(columns))
        monkeypatch.setenv("ESTIMATOR_NO_CALIBRATION", "1")  # a calibration in the user config dir must not leak in
        code = 0
        try:
            (estimate_main if entry == "estimate" else main)()
        except SystemExit as exit_:
            code = int(exit_.code or 0) if not isinstance(exit_.code, str) else 1
        return CliResult(code, out.getvalue(), err.getvalue())

    return invoke


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def golden(update_golden: bool) -> Callable[[str, str], None]:
    """``golden(name, text)``: assert ``text`` equals tests/data/golden/NAME.txt (``--update-golden`` rewrites it)."""

    def check(name: str, text: str) -> None:
        path = GOLDEN / f"{name}.txt"
        if update_golden:
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"{path} missing: run pytest --update-golden and commit it"
        assert text == path.read_text(encoding="utf-8")

    return check


@pytest.fixture(scope="session")
def workload(make_workload: Callable[..., InferenceWorkload]) -> Callable[..., InferenceWorkload]:
    """The same builder under the name the planning tests use."""
    return make_workload
