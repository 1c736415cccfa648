"""Models named by Hub id, read from a fake Hub on loopback: config.json and the safetensors headers by range
request (never the weights), pinned revisions, the caches, and one line for each way the Hub cannot answer."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.hub.checkpoints import GPT_OSS_COMMIT, GPT_OSS_SHARDS, QWEN_COMMITS, repos
from tests.hub.conftest import hub_environment, offline
from tests.hub.fake_hub import TOKEN, FakeHub

Cli = Callable[..., CliResult]
ROOT = Path(__file__).resolve().parents[2]
HEADER_READ = 100_001  # huggingface_hub reads a header's first 100,000 bytes (bytes=0-100000), then the rest if longer


def _report(cli: Cli, *args: str) -> dict[str, Any]:
    result = cli("estimate", *args, "--gpu", "h100", "--format", "json")
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _notes(report: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [n for n in report["assumptions"] if n["code"] == code]


def _line(result: CliResult) -> str:
    assert result.exit_code == 2 and result.stdout == "", result.stdout
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: --model "), result.stderr
    return result.stderr


def test_gpt_oss_120b_from_the_hub_is_its_mxfp4_checkpoint_and_fits_one_h100(cli: Cli, fake_hub: FakeHub) -> None:
    report = _report(cli, "--model", "openai/gpt-oss-120b")
    served = repos()["openai/gpt-oss-120b"].commits[GPT_OSS_COMMIT]
    headers_sum = sum(f.tensor_bytes for f in served.values() if not isinstance(f, bytes))
    assert headers_sum == 65_248_815_744  # the 687 tensors' bytes (tests/hub/checkpoints.py)
    memory = report["memory"]
    assert memory["weights_bytes"] == headers_sum and memory["fits"] is True
    assert report["model"]["name"] == "openai/gpt-oss-120b"
    (source,) = _notes(report, "model-source")
    assert source["values"]["source"] == f"hub:openai/gpt-oss-120b@{GPT_OSS_COMMIT}"
    (headers,) = _notes(report, "checkpoint-headers")
    assert headers["values"] == {"source": "safetensors", "files": GPT_OSS_SHARDS, "tensors": 687,
                                 "bytes": headers_sum}
    # the routed experts as stored: *_blocks and *_scales U8, 36 layers × 1,692,057,600 bytes, over the
    # architecture's 114,661,785,600 expert weights: MXFP4's 4 + 8 / 32 bits
    expert = next(row for row in memory["weights_by_role"] if row["role"] == "expert")
    assert (expert["bytes"], expert["params"], expert["bits_per_weight"]) == (60_914_073_600, 114_661_785_600, 4.25)


def test_only_the_headers_are_fetched_never_the_weights(cli: Cli, fake_hub: FakeHub) -> None:
    _report(cli, "--model", "openai/gpt-oss-120b")
    shards = fake_hub.served(".safetensors")
    assert {r.path.rsplit("/", 1)[1] for r in shards} == {
        f"model-{k:05d}-of-{GPT_OSS_SHARDS - 1:05d}.safetensors" for k in range(GPT_OSS_SHARDS)}
    assert all(r.range is not None and r.sent <= HEADER_READ for r in shards)
    assert sum(r.sent for r in fake_hub.log) < GPT_OSS_SHARDS * HEADER_READ + 1_000_000


def test_a_second_run_needs_no_network(cli: Cli, fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _report(cli, "--model", "openai/gpt-oss-120b")
    asked = len(fake_hub.log)
    offline(monkeypatch)
    assert _report(cli, "--model", "openai/gpt-oss-120b") == first
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", _closed_port())  # online, but the Hub is gone: the caches answer
    assert _report(cli, "--model", "openai/gpt-oss-120b") == first
    assert len(fake_hub.log) == asked


def test_a_revision_pins_the_commit(cli: Cli, fake_hub: FakeHub) -> None:
    def source(model: str) -> str:
        (note,) = _notes(_report(cli, "--model", model), "model-source")
        return str(note["values"]["source"])

    assert source("Qwen/Qwen3-0.6B") == f"hub:Qwen/Qwen3-0.6B@{QWEN_COMMITS[1]}"
    assert source("Qwen/Qwen3-0.6B@v1") == f"hub:Qwen/Qwen3-0.6B@{QWEN_COMMITS[0]}"
    asked = len(fake_hub.log)
    assert source(f"Qwen/Qwen3-0.6B@{QWEN_COMMITS[0]}") == f"hub:Qwen/Qwen3-0.6B@{QWEN_COMMITS[0]}"
    assert len(fake_hub.log) == asked  # that commit was read through the tag: a commit never changes, no request
    assert "the Hub has no revision 'v9' of Qwen/Qwen3-0.6B" in _line(cli("estimate", "--model", "Qwen/Qwen3-0.6B@v9",
                                                                         "--gpu", "h100"))


def test_a_gated_repository_says_to_accept_its_licence(cli: Cli, fake_hub: FakeHub,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    line = _line(cli("estimate", "--model", "hf:meta-llama/Llama-3.2-1B", "--gpu", "h100"))
    assert line == (f"error: --model 'meta-llama/Llama-3.2-1B': meta-llama/Llama-3.2-1B is gated on the Hub: accept "
                    f"its licence at {fake_hub.url}/meta-llama/Llama-3.2-1B and set HF_TOKEN to a token of that "
                    "account\n")
    # without the prefix, the catalog's entry of that alias answers, and the report says why
    (note,) = _notes(_report(cli, "--model", "meta-llama/Llama-3.2-1B"), "model-source")
    assert note["values"]["source"].startswith("the catalog's llama-3.2-1b (the Hub was not read: ")
    assert "is gated on the Hub" in note["values"]["source"]
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    report = _report(cli, "--model", "meta-llama/Llama-3.2-1B")
    assert _notes(report, "model-source")[0]["values"]["source"].startswith("hub:meta-llama/Llama-3.2-1B@")
    (files,) = repos()["meta-llama/Llama-3.2-1B"].commits.values()
    weights = files["model.safetensors"]
    assert not isinstance(weights, bytes) and report["memory"]["weights_bytes"] == weights.tensor_bytes


@pytest.mark.parametrize(("model", "says"), [
    ("nobody/no-such-model", "no model repository nobody/no-such-model on the Hub"),
    ("someone/gguf-only", "someone/gguf-only has no config.json on the Hub"),
])
def test_a_missing_repository_or_config_is_one_line(cli: Cli, fake_hub: FakeHub, model: str, says: str) -> None:
    assert says in _line(cli("estimate", "--model", model, "--gpu", "h100"))


def test_offline_and_not_cached_is_one_line_without_a_request(cli: Cli, fake_hub: FakeHub,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    offline(monkeypatch)
    line = _line(cli("estimate", "--model", "hf:Qwen/Qwen3-0.6B", "--gpu", "h100"))  # the Hub's, or none
    assert "HF_HUB_OFFLINE is set and Qwen/Qwen3-0.6B is not in the cache" in line
    (note,) = _notes(_report(cli, "--model", "openai/gpt-oss-120b"), "model-source")
    assert note["values"]["source"].startswith("the catalog's gpt-oss-120b (the Hub was not read: HF_HUB_OFFLINE")
    assert fake_hub.log == []


def _closed_port() -> str:
    """An address on loopback where nothing listens (a port bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_no_network_is_one_line_and_a_nonzero_exit_within_seconds(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(HF_ENDPOINT=_closed_port(), HF_HOME=str(tmp_path / "hf"), ESTIMATOR_CACHE_DIR=str(tmp_path / "c"),
               PYTHONPATH=str(ROOT))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "estimator", "estimate", "--model", "nobody/some-model", "--gpu",
                           "h100"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False)
    assert time.monotonic() - started < 15  # a refused connection is said at once: no retries, no waiting
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: --model 'nobody/some-model': cannot reach the Hub at http://127.0.0.1:")


def test_the_api_reads_a_hub_id(fake_hub: FakeHub) -> None:
    pytest.importorskip("fastapi", reason="estimator serve needs the [serve] extra: pip install '.[serve]'")
    pytest.importorskip("httpx2", reason="FastAPI's TestClient needs httpx2")
    from fastapi.testclient import TestClient

    from estimator.catalog.registry import default_catalog
    from estimator.serve.app import create_app

    client = TestClient(create_app(default_catalog()))
    answer = client.get("/v1/estimate", params={"model": "Qwen/Qwen3-0.6B", "gpu": "h100"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["assumptions"][0]["values"]["source"] == f"hub:Qwen/Qwen3-0.6B@{QWEN_COMMITS[1]}"
    refused = client.get("/v1/estimate", params={"model": "nobody/no-such-model", "gpu": "h100"})
    assert refused.status_code == 422 and "no model repository nobody/no-such-model" in refused.text


def test_an_existing_folder_of_that_name_is_read_as_a_path(cli: Cli, fake_hub: FakeHub, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "Qwen" / "Qwen3-0.6B"
    folder.mkdir(parents=True)
    (folder / "config.json").write_bytes((ROOT / "tests/data/configs/Qwen--Qwen3-0.6B.json").read_bytes())
    monkeypatch.chdir(tmp_path)
    assert _notes(_report(cli, "--model", "Qwen/Qwen3-0.6B"), "model-source") == []
    assert fake_hub.log == []


def test_the_hub_environment_is_the_fixtures(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hub_environment(monkeypatch, tmp_path, "http://127.0.0.1:1")
    from estimator.catalog.hub import settings

    s = settings()
    assert (s.endpoint, s.cache_dir, s.offline) == ("http://127.0.0.1:1", str(tmp_path / "hf-home" / "hub"), False)


def test_plan_and_sweep_read_a_hub_id(cli: Cli, fake_hub: FakeHub) -> None:
    planned = cli("plan", "--model", "Qwen/Qwen3-0.6B", "--gpu", "h100", "--concurrency", "4", "--format", "json")
    assert planned.exit_code == 0, planned.stderr
    assert json.loads(planned.stdout)["model"] == "Qwen/Qwen3-0.6B"
    swept = cli("sweep", "--model", "Qwen/Qwen3-0.6B,llama-3.2-1b", "--gpu", "h100", "--batch", "1",
                "--prompt-tokens", "1k", "--format", "csv")
    assert swept.exit_code == 0, swept.stderr
    rows = swept.stdout.splitlines()
    names = [row.split(",")[rows[0].split(",").index("model.name")] for row in rows[1:]]
    assert names == ["Qwen/Qwen3-0.6B", "llama-3.2-1b"]


def test_hf_quant_config_json_gives_the_format_a_config_does_not(cli: Cli, fake_hub: FakeHub) -> None:
    report = _report(cli, "--model", "someone/qwen3-0.6b-nvfp4")
    (weights,) = _notes(report, "checkpoint-weights")
    assert weights["values"] == {"method": "modelopt", "summary": "NVFP4 linear weights (FP4, an fp8 scale per 16); "
                                 "kept 16-bit: lm_head, model.embed_tokens, as its hf_quant_config.json says; "
                                 "covers attention, mlp"}
    assert _notes(report, "checkpoint-headers") == []  # no safetensors files: the config and the format alone


def test_a_token_the_hub_refuses_is_one_line(cli: Cli, fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_token")
    assert "refused the token (HTTP 401 for Qwen/Qwen3-0.6B): check HF_TOKEN" in _line(
        cli("estimate", "--model", "hf:Qwen/Qwen3-0.6B", "--gpu", "h100"))
