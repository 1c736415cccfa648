"""The page in a real browser: a headless Chromium (the system's, driven over the DevTools protocol on loopback)
loads it, fills the form, and the figures it shows equal the API's, formatted as the CLI's tables format them.

Skips, with one message, where no Chromium is installed (``apt-get install chromium``) or the [serve] extra and
websocket-client are missing. ``ESTIMATOR_SCREENSHOTS=docs`` writes the README's screenshots (docs/serve-*.png).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from estimator.units import format_bytes, format_seconds

ROOT = Path(__file__).resolve().parent.parent.parent
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FIELDS = {"model": "llama-3.1-8b", "gpu": "h100", "batch": "8", "prompt_tokens": "4096", "output_tokens": "512"}


def _browser() -> str:
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if found is None:
        pytest.skip("no Chromium to drive: apt-get install chromium (the browser test needs a system browser)")
    return found


class Page:
    """One Chromium tab over the DevTools protocol (websocket-client, loopback only)."""

    def __init__(self, websocket_url: str) -> None:
        import websocket

        assert websocket_url.startswith("ws://127.0.0.1:")
        self.socket = websocket.create_connection(websocket_url, timeout=60, suppress_origin=True)
        self.next_id = 0

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                assert "error" not in message, (method, message["error"])
                result: dict[str, Any] = message["result"]
                return result

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def wait(self, expression: str, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while not self.evaluate(f"Boolean({expression})"):
            assert time.monotonic() < deadline, f"timed out waiting for {expression}"
            time.sleep(0.1)

    def open(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        time.sleep(0.2)
        self.wait("document.readyState === 'complete' && document.body && document.body.dataset.ready === 'true'")

    def screenshot(self, path: Path, width: int, height: int, *, mobile: bool) -> None:
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=mobile)
        time.sleep(0.3)
        shot = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=False)
        path.write_bytes(base64.b64decode(shot["data"]))


def _first_line(stream: Any, marker: str, seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = stream.readline()
        if marker in line:
            return str(line)
        if not line:
            time.sleep(0.05)
    raise AssertionError(f"no {marker!r} line")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    pytest.importorskip("uvicorn", reason="estimator serve needs the [serve] extra: pip install '.[serve]'")
    env = {**os.environ, "ESTIMATOR_NO_CALIBRATION": "1"}
    with subprocess.Popen([sys.executable, "-m", "estimator", "serve", "--port", "0"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, cwd=ROOT, env=env) as process:
        try:
            url = _first_line(process.stdout, "http://127.0.0.1:").split()[2]
            yield url
        finally:
            process.terminate()
            process.communicate(timeout=30)


@pytest.fixture(scope="module")
def page(server: str) -> Iterator[Page]:
    pytest.importorskip("websocket", reason="the browser test drives Chromium with websocket-client")
    browser = _browser()
    with tempfile.TemporaryDirectory(prefix="estimator-chromium-") as profile, subprocess.Popen(
            [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             "--disable-dev-shm-usage", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             f"--user-data-dir={profile}", "--window-size=1280,900", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as chromium:
        try:
            line = _first_line(chromium.stderr, "DevTools listening on")
            port = line.split("ws://127.0.0.1:")[1].split("/")[0]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
                targets = json.loads(answer.read())
            tab = Page(next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page"))
            tab.send("Page.enable")
            tab.send("Runtime.enable")
            yield tab
            tab.socket.close()
        finally:
            chromium.terminate()
            chromium.communicate(timeout=30)


def _api(server: str, path: str, fields: dict[str, str]) -> Any:
    with urllib.request.urlopen(f"{server}v1/{path}?{urlencode(fields)}", timeout=60) as answer:
        return json.loads(answer.read())


def _shown(page: Page, within: str) -> list[dict[str, str]]:
    shown: list[dict[str, str]] = page.evaluate(
        f"[...document.querySelectorAll('{within} [data-field]')].map(e => "
        "({field: e.dataset.field, value: e.dataset.value, text: e.textContent}))")
    return shown


def _expected_text(field: str, value: float) -> str:
    """The CLI's formatting of a figure: bytes in GB, times in µs/ms/s, rates with one decimal, the largest batch
    a whole number and the longest context in tokens."""
    if field.endswith("max_batch"):
        return f"{int(value):,}"
    if field.endswith(("max_context_tokens", "max_seq_len")):
        return f"{int(value):,} tok"
    if field.endswith("_bytes"):
        return format_bytes(value, binary=False)
    if field.endswith("_s") and not field.endswith("_per_s"):
        return format_seconds(value)
    return f"{value:,.1f}"


def _lookup(report: dict[str, Any], dotted: str) -> Any:
    value: Any = report
    for key in dotted.split("."):
        value = value[key]
    return value


def _fill(page: Page, fields: dict[str, str]) -> None:
    """Type the fields into the form as a person would (value, then input and change events), then submit."""
    script = ";".join(
        f"(e => {{ e.value = {json.dumps(v)}; e.dispatchEvent(new Event('input', {{bubbles: true}})); "
        f"e.dispatchEvent(new Event('change', {{bubbles: true}})); }})(document.getElementById({json.dumps(k)}))"
        for k, v in fields.items())
    page.evaluate(script)
    page.evaluate("document.getElementById('result').hidden = true; document.getElementById('run').click()")
    page.wait("!document.getElementById('result').hidden || !document.getElementById('error').hidden")


def test_the_figures_shown_are_the_api_s(server: str, page: Page) -> None:
    page.open(server)
    _fill(page, FIELDS)
    assert page.evaluate("document.getElementById('error').hidden"), page.evaluate(
        "document.getElementById('error').textContent")
    report = _api(server, "estimate", FIELDS)
    shown = _shown(page, "#result")
    fields = {s["field"] for s in shown}
    assert {"memory.per_gpu_bytes", "memory.capacity_bytes", "memory.weights_per_gpu_bytes", "time.prefill_s",
            "time.decode_step_s", "time.tokens_per_s", "memory.max_batch", "memory.max_context_tokens"} <= fields
    for s in shown:
        expected = _lookup(report, s["field"])
        if expected is None:
            assert s["value"] == "" and s["text"] in ("—", ""), s
            continue
        assert float(s["value"]) == expected, s  # the API's own number, carried into the page unchanged
        assert s["text"] == _expected_text(s["field"], expected), s
    verdict = page.evaluate("document.getElementById('verdict').textContent")
    assert verdict == ("Fits" if report["memory"]["fits"] else "Does not fit")
    warnings = page.evaluate("[...document.querySelectorAll('#warnings li')].map(l => l.textContent)")
    assert warnings == ([w["text"] for w in report["warnings"]] or ["none"])  # the notes in words, as the API says


def test_a_job_that_does_not_fit_shows_what_would(server: str, page: Page) -> None:
    """The page's answer to a job that does not fit ends with the API's changes, each with its memory per GPU."""
    job = {"model": "llama-3.1-70b", "gpu": "h100", "batch": "1", "prompt_tokens": "2048", "output_tokens": "256"}
    page.open(server)
    _fill(page, job)
    report = _api(server, "estimate", job)
    assert report["fixes"] and page.evaluate("document.getElementById('verdict').textContent") == "Does not fit"
    shown = page.evaluate("[...document.querySelectorAll('#fixes li')].map(l => l.textContent)")
    assert len(shown) == len(report["fixes"])
    for text, fix in zip(shown, report["fixes"], strict=True):
        assert text.startswith(f"{fix['change']}: {format_bytes(fix['per_gpu_bytes'], binary=False)} per GPU, "), text
        assert ("fits;" in text) is fix["fits"]


def test_the_share_link_reproduces_the_estimate(server: str, page: Page) -> None:
    page.open(server)
    _fill(page, FIELDS)
    link = page.evaluate("document.getElementById('share').href")
    assert link.startswith(server) and all(f"{k}={v}" in link for k, v in FIELDS.items())
    first = _shown(page, "#result")
    page.open(server + "?" + link.split("?", 1)[1])  # a fresh load of the link runs the estimate by itself
    page.wait("!document.getElementById('result').hidden")
    assert _shown(page, "#result") == first


def test_training_and_the_plan_table(server: str, page: Page) -> None:
    page.open(server)
    page.evaluate("document.querySelector('input[name=mode][value=train]').click()")
    _fill(page, {"model": "llama-3.1-8b", "gpu": "h100", "batch": "2", "seq_len": "4096"})
    report = _api(server, "estimate", {"model": "llama-3.1-8b", "gpu": "h100", "batch": "2", "seq_len": "4096",
                                       "mode": "train"})
    shown = {s["field"]: s for s in _shown(page, "#result")}
    assert float(shown["memory.per_gpu_bytes"]["value"]) == report["memory"]["per_gpu_bytes"]
    assert float(shown["time.step_s"]["value"]) == report["time"]["step_s"]
    page.evaluate("document.querySelector('input[name=mode][value=infer]').click()")
    _fill(page, {"model": "llama-3.1-70b", "gpu": "", "dtype": "fp8", "concurrency": "16"})
    page.evaluate("document.getElementById('plan-run').click()")
    page.wait("document.querySelectorAll('#plan-table tbody tr').length > 0")
    plan = _api(server, "plan", {"model": "llama-3.1-70b", "dtype": "fp8", "concurrency": "16"})
    rows = page.evaluate("document.querySelectorAll('#plan-table tbody tr').length")
    assert rows == len(plan["options"])
    first = {s["field"]: s for s in _shown(page, "#plan-table tbody tr:first-child")}
    assert float(first["plan.tokens_per_s"]["value"]) == plan["options"][0]["tokens_per_s"]
    page.evaluate("document.querySelector('#plan-table th[data-key=cards]').click()")  # sort by GPUs
    cards = [s["value"] for s in _shown(page, "#plan-table tbody") if s["field"] == "plan.cards" and s["value"]]
    assert [int(c) for c in cards] == sorted(int(c) for c in cards)
    page.evaluate("(e => { e.value = 'h100'; e.dispatchEvent(new Event('input')); })"
                  "(document.getElementById('plan-filter'))")
    kept = page.evaluate("document.querySelectorAll('#plan-table tbody tr').length")
    assert 0 < kept < rows
    page.evaluate("document.getElementById('gpu').value = 'h100'; document.getElementById('plan-only').click();"
                  "document.getElementById('plan-filter').value = '';"
                  "document.querySelector('#plan-table tbody').replaceChildren();"  # empty until the answer comes
                  "document.getElementById('plan-run').click()")
    page.wait("document.querySelectorAll('#plan-table tbody tr').length > 0")
    only = _api(server, "plan", {"model": "llama-3.1-70b", "dtype": "fp8", "concurrency": "16", "gpu": "h100"})
    assert page.evaluate("planQuery().get('gpu')") == "h100"
    assert page.evaluate("document.querySelectorAll('#plan-table tbody tr').length") == len(only["options"])
    csv_link = page.evaluate("document.getElementById('plan-csv').href")
    with urllib.request.urlopen(csv_link, timeout=60) as answer:
        assert answer.read().decode().splitlines()[0].startswith("model,dtype,kv_dtype")


def test_screenshots_at_laptop_and_phone_widths(server: str, page: Page, tmp_path: Path) -> None:
    """The page at 1280 and 390 px; on the phone nothing is wider than the screen. With ESTIMATOR_SCREENSHOTS=docs
    the PNGs are the README's."""
    folder = ROOT / "docs" if os.environ.get("ESTIMATOR_SCREENSHOTS") == "docs" else tmp_path
    query = urlencode({**FIELDS, "concurrency": "32"})
    for name, width, height, mobile in (("desktop", 1280, 1500, False), ("phone", 390, 2000, True)):
        page.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=mobile)
        page.open(f"{server}?{query}")
        page.wait("document.querySelectorAll('#plan-table tbody tr').length > 0")
        page.screenshot(folder / f"serve-{name}.png", width, height, mobile=mobile)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name}: the page is {overflow} px wider than the screen"
        assert (folder / f"serve-{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        # what must be in view without scrolling sideways: on a laptop the plan's ranking column and times, on a
        # phone the expected times; and on both the fit, the memory per GPU, the largest batch and context
        wanted = ["#verdict", "#result [data-field='memory.per_gpu_bytes']", "#result [data-field='time.prefill_s']",
                  "#result [data-field='time.decode_step_s']", "#result [data-field='memory.max_batch']",
                  "#result [data-field='memory.max_context_tokens']"]
        if name == "desktop":
            wanted += [f"#plan-table th[data-key={key}]" for key in
                       ("usd_per_million_tokens", "time_to_first_token_s", "time_per_output_token_s")]
            wanted += [f"#plan-table tbody tr:first-child [data-field='plan.{key}']" for key in
                       ("usd_per_million_tokens", "time_to_first_token_s", "time_per_output_token_s")]
        for selector in wanted:
            assert _in_view_sideways(page, selector), f"{name}: {selector} is not in view without scrolling sideways"


def _in_view_sideways(page: Page, selector: str) -> bool:
    """Whether the element's box lies within the window's width and within every box that clips it (a table's
    scrolling container), scrolled to its start: seen without scrolling sideways."""
    box: dict[str, float] | None = page.evaluate(
        f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
        "  const r = e.getBoundingClientRect(); let left = 0, right = window.innerWidth;"
        "  for (let p = e.parentElement; p; p = p.parentElement) {"
        "    const s = getComputedStyle(p);"
        "    if (s.overflowX !== 'visible') { const c = p.getBoundingClientRect();"
        "      left = Math.max(left, c.left); right = Math.min(right, c.right); if (p.scrollLeft) return null; } }"
        "  return {left: r.left, right: r.right, width: r.width, clipLeft: left, clipRight: right}; })()")
    assert box is not None, f"{selector}: not on the page"
    return box["width"] > 0 and box["left"] >= box["clipLeft"] - 0.5 and box["right"] <= box["clipRight"] + 0.5
