"""The version `estimator --version` and `estimate --version` print."""

from __future__ import annotations

import re


def package_version() -> str:
    """The installed distribution's version (its metadata), or the source's (pyproject.toml) when run from a
    checkout."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llm-estimator")
    except PackageNotFoundError:  # a checkout: its pyproject.toml says the version
        from pathlib import Path

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        found = re.search(r'^version = "([^"]+)"', pyproject.read_text(encoding="utf-8"), re.MULTILINE) \
            if pyproject.is_file() else None
        return found.group(1) if found else "unknown"
