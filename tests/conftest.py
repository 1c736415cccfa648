"""Shared fixtures: the test catalog, workloads, an in-process CLI runner, golden files.

Two catalogs:

- ``catalog``: the tiny test catalog in tests/data/catalog (7 GPUs, 9 models, 7 formats, both profiles and
  costs.yaml, in the specs/ layout; each file a verbatim copy of the shipped one, so a figure computed from it
  equals the shipped figure; its README lists them). Unit tests use it: they test mechanisms, and adding or
  editing a shipped spec does not move them.
- ``shipped_catalog`` (or ``default_catalog()``): the packaged catalog, for tests whose point is the shipped data
  or a shipped model's exact figures:
  tests/catalog/test_shipped_specs.py (the data tests of every shipped file; its ``catalog`` is the shipped one)
  and test_parse_cache.py (the cache over the real files); tests/cli/ (the commands, and so the golden tables,
  read the packaged catalog as a user runs them); tests/live/test_validation.py (measured rows of every family)
  and test_probe.py's catalog matching (a probed card against every shipped GPU); tests/property/ (they range
  over every shipped model and format); tests/training/ (shipped Llama figures checked byte by byte against the
  H200 reference step); and, by taking ``shipped_catalog``, test_capacity.py's boundary property, test_sweep.py's
  row-equals-estimate cases and test_plan.py's every-card plan (families and cards the tiny catalog leaves out),
  test_collectives.py's server links (the tiny catalog has no specs/systems) and test_estimate.py's sum of terms
  (Qwen2.5-7B on an L40S). A new unit test that needs a spec the tiny catalog lacks either copies that file
  verbatim into tests/data/catalog (and its README) or takes ``shipped_catalog`` and says why.
"""

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
TEST_CATALOG = DATA / "catalog"


def pytest_configure(config: pytest.Config) -> None:
    """Tests never write to the user's cache folder: the parsed-spec cache goes to a folder of the run's own. They
    never reach the network either: a Hub id (``org/name``) is read offline from an empty Hugging Face cache (the
    tests of Hub ids start a fake Hub on loopback, tests/hub/conftest.py)."""
    del config
    if "ESTIMATOR_CACHE_DIR" not in os.environ:
        os.environ["ESTIMATOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="estimator-test-cache-")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="estimator-test-hf-home-")
    os.environ.pop("HF_HUB_CACHE", None)
    os.environ.setdefault("ESTIMATOR_NO_USER_SPECS", "1")  # the user's own specs folder must not leak in


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/data/golden/* from current output")
    parser.addoption("--update-schema", action="store_true", help="rewrite docs/schema/*.json from the report models")


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    """The tiny test catalog (tests/data/catalog)."""
    return Catalog.load(TEST_CATALOG)


@pytest.fixture(scope="session")
def shipped_catalog() -> Catalog:
    """The packaged catalog, for tests about the shipped data (see the module docstring)."""
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
def update_schema(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-schema"))


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
