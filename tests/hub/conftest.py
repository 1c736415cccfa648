"""The fake Hub for the tests of Hub ids: started on loopback, with the environment pointing at it (``HF_ENDPOINT``),
fresh caches (``HF_HOME``, ``ESTIMATOR_CACHE_DIR``) and a guard that refuses any connection to another host."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hub.checkpoints import repos
from tests.hub.fake_hub import FakeHub, serving

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@pytest.fixture
def no_other_host(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every connection or name look-up of a host other than loopback fails, and is listed here."""
    refused: list[str] = []
    lookup: Callable[..., Any] = socket.getaddrinfo
    connect: Callable[..., Any] = socket.socket.connect

    def guarded_lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if str(host) not in LOOPBACK:
            refused.append(str(host))
            raise socket.gaierror(f"the tests reach no host but loopback: {host}")
        return lookup(host, *args, **kwargs)

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else str(address)
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in LOOPBACK:
            refused.append(host)
            raise ConnectionRefusedError(f"the tests reach no host but loopback: {host}")
        return connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", guarded_lookup)
    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    return refused


def hub_environment(monkeypatch: pytest.MonkeyPatch, folder: Path, endpoint: str) -> None:
    """The variables huggingface_hub and the estimator read, pointing at ``endpoint`` and fresh caches."""
    import huggingface_hub.constants

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HF_HUB_CACHE", "HF_HUB_ETAG_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HOME", str(folder / "hf-home"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", str(folder / "estimator-cache"))
    # read once, when huggingface_hub was first imported (the test run starts offline: tests/conftest.py)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    # huggingface_hub 2.x fetches a registry of agent harnesses from the endpoint it read when imported (not the one
    # a call names) to word its User-Agent: an empty registry, as it keeps when the Hub cannot be reached
    try:
        from huggingface_hub.utils import _detect_agent
    except ImportError:  # older releases have no such registry
        return
    monkeypatch.setattr(_detect_agent, "_registry", {"standardEnvVars": [], "harnesses": {}}, raising=False)


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_other_host: list[str]) -> Iterator[FakeHub]:
    """The fake Hub serving tests/hub/checkpoints.py's repositories, the environment pointing at it; after the
    test, no host but loopback was asked for."""
    with serving(repos()) as hub:
        hub_environment(monkeypatch, tmp_path, hub.url)
        yield hub
    assert no_other_host == []


def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """``HF_HUB_OFFLINE=1`` from now on, as a user sets it."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
