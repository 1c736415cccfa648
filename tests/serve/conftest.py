"""Fixtures of the `estimator serve` tests: the app over the shipped catalog (the CLI, which they are compared
with, reads the shipped catalog), in-process; they skip where the [serve] extra is not installed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from fastapi.testclient import TestClient


@pytest.fixture(scope="package")
def client() -> TestClient:
    pytest.importorskip("fastapi", reason="estimator serve needs the [serve] extra: pip install '.[serve]'")
    pytest.importorskip("httpx2", reason="FastAPI's TestClient needs httpx2")
    from fastapi.testclient import TestClient

    from estimator.catalog.registry import default_catalog
    from estimator.serve.app import create_app

    return TestClient(create_app(default_catalog()))


@pytest.fixture(autouse=True)
def _no_calibration(monkeypatch: pytest.MonkeyPatch) -> None:
    """A calibration in the user config dir must not leak into the server's answers (the CLI fixture sets it)."""
    monkeypatch.setenv("ESTIMATOR_NO_CALIBRATION", "1")
