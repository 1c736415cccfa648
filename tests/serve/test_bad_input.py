"""Bad input answers HTTP 422 (413, 414 for size) with one line per bad field, never a traceback, never a file
read; a flood of bad requests (bounded, in-process or on loopback) gets nothing else."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parent.parent.parent


def _detail(answer: Any) -> list[dict[str, Any]]:
    detail = answer.json()["detail"]
    assert isinstance(detail, list) and detail
    for entry in detail:
        assert set(entry) == {"loc", "msg", "type"} and "\n" not in entry["msg"] and "Traceback" not in entry["msg"]
    return detail


def test_each_unknown_or_repeated_field_is_named(client: TestClient) -> None:
    answer = client.get("/v1/estimate?model=70b&gpu=a100&bacth=8&colour=red&gpu=h100")
    assert answer.status_code == 422
    assert [e["loc"] for e in _detail(answer)] == [["query", "bacth"], ["query", "colour"], ["query", "gpu"]]


def test_a_bad_value_gets_the_cli_s_message_and_its_field(client: TestClient, cli: Any) -> None:
    cases = {"batch=0": "batch", "precision=fp9&mode=train": "precision", "gpu=nosuchcard": "gpu",
             "dtype=int3": "dtype", "gpus=3": "gpus", "qlora=maybe": "qlora"}  # gpus: the heads TP does not divide
    for query, field in cases.items():
        answer = client.get(f"/v1/estimate?model=llama-3.1-8b&gpu=h100&{query}".replace("gpu=h100&gpu=", "gpu="))
        assert answer.status_code == 422, query
        (entry,) = _detail(answer)
        assert entry["loc"][-1] == field, (query, entry)
    printed = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "0")
    answer = client.get("/v1/estimate?model=llama-3.1-8b&gpu=h100&batch=0")
    assert printed.stderr == f"error: {_detail(answer)[0]['msg']}\n"  # the CLI's words


@pytest.mark.parametrize(("path", "field", "message"), [
    ("estimate?model=llama-3.1-8b&gpu=h100&batch=1e23", "batch", "--batch: not a count: '1e23' (a count is at most "
                                                                 "1e18)"),
    ("estimate?model=llama-3.1-8b&gpu=h100&batch=1e17", "batch", "--batch must be at most 1,000,000, got "
                                                                 "100,000,000,000,000,000"),
    ("estimate?model=llama-3.1-8b&gpu=h100&gpus=5000", "gpus", "--gpus must be at most 4,096, got 5,000"),
    ("estimate?model=llama-3.1-8b&gpu=h100&prompt_tokens=2e8", "prompt_tokens",
     "--prompt-tokens must be at most 100,000,000, got 200,000,000"),
    ("train?model=llama-3.2-1b&gpu=h100&seq_len=2e8", "seq_len", "--seq-len must be at most 100,000,000, got "
                                                                 "200,000,000"),
    ("train?model=llama-3.2-1b&gpu=h100&lora_rank=1m", "lora_rank", "--lora-rank must be at most 65,536, got "
                                                                    "1,000,000"),
    ("plan?model=llama-3.2-1b&concurrency=2m", "concurrency", "--concurrency must be at most 1,000,000, got "
                                                              "2,000,000"),
    ("plan?model=llama-3.2-1b&concurrency=8&output_tokens=2e8", "output_tokens",
     "--output-tokens must be at most 100,000,000, got 200,000,000"),
    ("sweep?model=llama-3.2-1b&gpu=h100&batch=1,2m", "batch", "sweep --batch must lie in [1, 1,000,000]"),
    ("sweep?model=llama-3.2-1b&gpu=h100&gpus=5000", "gpus", "--gpus must be at most 4,096, got 5,000"),
])
def test_a_value_past_its_bound_is_refused_at_its_field(client: TestClient, cli: Any, path: str, field: str,
                                                        message: str) -> None:
    answer = client.get("/v1/" + path)
    assert answer.status_code == 422
    assert _detail(answer) == [{"loc": ["query", field], "msg": message, "type": "value_error"}]
    endpoint, query = path.split("?")
    words = [w for pair in query.split("&") for w in ("--" + pair.split("=")[0].replace("_", "-"), pair.split("=")[1])]
    printed = cli(*(["estimate", "--mode", "train"] if endpoint == "train" else [endpoint]), *words)
    assert (printed.exit_code, printed.stdout, printed.stderr) == (2, "", f"error: {message}\n")  # the CLI's words


def test_server_paths_are_no_fields(client: TestClient) -> None:
    for field in ("specs_dir=/etc", "calibration=/etc/passwd", "plot=/tmp/x.png", "output=/tmp/x", "units=gib"):
        assert client.get(f"/v1/estimate?model=70b&gpu=a100&{field}").status_code == 422, field
    assert client.get("/v1/plan?model=70b&concurrency=1&prices=/etc/passwd").status_code == 422


def test_a_model_path_is_refused_and_never_read(client: TestClient, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text((ROOT / "tests/data/configs/Qwen--Qwen3-0.6B.json").read_text(encoding="utf-8"))
    for model in (str(config), str(tmp_path), "~/config.json", "../config.json"):
        answer = client.get("/v1/estimate", params={"model": model, "gpu": "h100"})
        assert answer.status_code == 422, model
        assert "the server reads no file" in _detail(answer)[0]["msg"] or "unknown model" in _detail(answer)[0]["msg"]


def test_body_query_and_grid_limits(client: TestClient) -> None:
    from estimator.serve.jobs import MAX_BODY_BYTES, MAX_SWEEP_POINTS

    big = b"{" + b" " * MAX_BODY_BYTES + b"}"
    assert client.post("/v1/estimate?gpu=h100", content=big).status_code == 413
    assert client.get("/v1/estimate?model=70b&gpu=a100&batch=" + "1" * 5000).status_code == 414
    # 10 batches x 10 prompts x 10 outputs x 3 cards x 10 degrees = 30,000 points, past the 20,000 a request holds
    assert MAX_SWEEP_POINTS == 20_000
    axis = ",".join(str(n) for n in range(1, 11))
    answer = client.get(f"/v1/sweep?model=70b&gpu=h100,a100,l40s&batch={axis}&prompt_tokens={axis}"
                        f"&output_tokens={axis}&gpus={axis}")
    assert answer.status_code == 422
    assert _detail(answer)[0]["msg"] == (  # worded as the CLI's refusal (tests/cli/test_cli_plan.py)
        "the grid has 30,000 points, more than the limit of 20,000: a request holds no more; use "
        "`estimator sweep -o grid.csv` (and --max-points) for more")
    raised = client.get(f"/v1/sweep?model=70b&gpu=h100,a100,l40s&batch={axis}&prompt_tokens={axis}"
                        f"&output_tokens={axis}&gpus={axis}&max_points=1m")
    assert raised.status_code == 422  # a request's max_points cannot raise the server's limit
    lowered = client.get("/v1/sweep?model=70b&gpu=h100&batch=1,2&max_points=1")
    assert lowered.status_code == 422  # but it can lower it
    assert "the grid has 2 points, more than the limit of 1" in _detail(lowered)[0]["msg"]


@pytest.mark.parametrize("body", [b"", b"not json", b"[1, 2]", b'{"model_type": "nosuch"}', b"\xff\xfe",
                                  b"[" * 100_000 + b"]" * 100_000, b'{"model_type": "llama", "num_hidden_layers": -1}',
                                  b'{"x": ' + b"9" * 5000 + b"}"])
def test_a_bad_config_json_body_is_one_line(client: TestClient, body: bytes) -> None:
    answer = client.post("/v1/estimate?gpu=h100", content=body)
    assert answer.status_code == 422
    (entry,) = _detail(answer)
    assert entry["loc"] == ["body"]


FIELDS = ["model", "gpu", "dtype", "kv_dtype", "batch", "prompt_tokens", "output_tokens", "gpus", "system", "nodes",
          "mode", "seq_len", "zero", "dp", "tp", "pp", "lora_rank", "qlora", "gpu_memory", "concurrency", "format"]
VALUES = ["", "0", "-1", "1e309", "nan", "inf", "9" * 400, "1.5", "x", "70b", "h100", "fp8", "train", "true",
          "\x00", "é", "../../etc/passwd", "%s", "{}", "[]", "1,2", "8k", "1Ki", "-0", "0x10", " 1 "]


def test_a_flood_of_bad_requests_gets_only_answers(client: TestClient) -> None:
    """1,500 requests of random fields and values on every endpoint (seeded, so a failure replays): each is a
    200 or a 4xx with one line per field, never a 500."""
    rng = random.Random(17)
    for _ in range(1500):
        path = rng.choice(["/v1/estimate", "/v1/train", "/v1/plan", "/v1/sweep"])
        params: list[tuple[str, str | int | float | bool | None]] = [
            (rng.choice(FIELDS), rng.choice(VALUES)) for _ in range(rng.randint(0, 6))]
        answer = client.get(path, params=params)
        assert answer.status_code in (200, 413, 414, 422), (path, params, answer.text)
        if answer.status_code != 200:
            _detail(answer)


def test_the_live_server_on_loopback_answers_the_cli_s_json_and_survives_a_flood(cli: Any) -> None:
    """`estimator serve --port 0` binds 127.0.0.1 and prints its URL; the acceptance request answers what
    `estimate --model 70b --dtype fp16 --gpu a100 --format json` prints; 200 bad requests later it still does."""
    pytest.importorskip("uvicorn", reason="estimator serve needs the [serve] extra: pip install '.[serve]'")
    with subprocess.Popen([sys.executable, "-m", "estimator", "serve", "--port", "0"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=ROOT, env=_env()) as server:
        try:
            line = server.stdout.readline() if server.stdout else ""
            url = line.split()[2]
            assert url.startswith("http://127.0.0.1:"), line
            acceptance = f"{url}v1/estimate?model=70b&dtype=fp16&gpu=a100"
            expected = cli("estimate", "--model", "70b", "--dtype", "fp16", "--gpu", "a100", "--format", "json").stdout
            assert _get(acceptance) == (200, expected)
            rng = random.Random(3)
            for _ in range(200):
                query = "&".join(f"{rng.choice(FIELDS)}={rng.choice(['x', '-1', '0', '1e400'])}" for _ in range(3))
                status, _ = _get(f"{url}v1/estimate?{query}")
                assert status == 422, query
            assert _get(acceptance) == (200, expected)
        finally:
            server.terminate()
            _, errors = server.communicate(timeout=30)
    assert "Traceback" not in errors


def _env() -> dict[str, str]:
    return {**os.environ, "ESTIMATOR_NO_CALIBRATION": "1"}


def _get(url: str) -> tuple[int, str]:
    assert url.startswith("http://127.0.0.1:")  # loopback only
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_missing_extra_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Without FastAPI, `estimator serve` prints the install hint in one line and exits non-zero."""
    import builtins

    import typer

    from estimator.cli.run import run
    from estimator.serve.command import INSTALL_HINT, serve_command

    real = builtins.__import__

    def no_fastapi(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".", maxsplit=1)[0] in ("fastapi", "uvicorn"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_fastapi)
    alone = typer.Typer(add_completion=False)
    alone.command()(serve_command)
    with pytest.raises(SystemExit) as exit_:
        run(typer.main.get_command(alone), [])
    assert exit_.value.code != 0
    assert capsys.readouterr().err == f"error: {INSTALL_HINT}\n"
