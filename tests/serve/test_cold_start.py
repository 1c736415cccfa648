"""A fresh server answers its first requests, fired at once, with no 500: a sweep and CSV estimates together
once found `render.formats` looking the sweep's type up in `sys.modules` while another thread was still importing
that module (an AttributeError, answered 500). No module of the package looks a module up there now."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "estimator"
SWEEP = "v1/sweep?model=llama-3.2-1b&gpu=h100&batch=1,8&prompt_tokens=512,2k"
ESTIMATE_CSV = "v1/estimate?model=llama-3.2-1b&gpu=h100&batch={batch}&format=csv"
STARTS = 2  # fresh servers; each answers its first requests all at once


def _status(url: str) -> int:
    assert url.startswith("http://127.0.0.1:")  # loopback only
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def _first_answers(urls: list[str]) -> tuple[list[int], str]:
    """The statuses of ``urls``, fired at once at a fresh `estimator serve --port 0`, and the server's stderr."""
    env = {**os.environ, "ESTIMATOR_NO_CALIBRATION": "1"}
    with subprocess.Popen([sys.executable, "-m", "estimator", "serve", "--port", "0"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env) as server:
        try:
            line = server.stdout.readline() if server.stdout else ""
            base = line.split()[2]
            assert base.startswith("http://127.0.0.1:"), line
            with ThreadPoolExecutor(len(urls)) as pool:
                statuses = list(pool.map(_status, [base + url for url in urls]))
        finally:
            server.terminate()
            _, errors = server.communicate(timeout=30)
    return statuses, errors


def test_a_fresh_server_answers_mixed_sweep_and_csv_requests_with_no_500() -> None:
    pytest.importorskip("uvicorn", reason="estimator serve needs the [serve] extra: pip install '.[serve]'")
    urls = [SWEEP, SWEEP + "&format=csv", *(ESTIMATE_CSV.format(batch=b) for b in (1, 2, 4, 8, 16, 32))]
    for _ in range(STARTS):
        statuses, errors = _first_answers(urls)
        assert statuses == [200] * len(urls), (statuses, errors[-2000:])
        assert "Traceback" not in errors


def test_no_module_of_the_package_looks_a_module_up_in_sys_modules() -> None:
    """A module found there may be half-built (another thread still importing it); an import waits for it."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Name) \
                    and node.value.id == "sys":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
