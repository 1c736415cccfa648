"""The HTTP API's share of the fuzz campaign (tests/fuzz/campaign.py): requests, valid and hostile, sent to the app
of `estimator serve` in-process (FastAPI's TestClient, no socket), and what an answer must be.

A request is a case whose arguments are ``("HTTP", method, path_and_query)``, with its body, if any, as the file
``body``. The server keeps its promise when it never answers 5xx (500 is a crash; 501, a missing extra, is not
sent here), a 200 is a document whose JSON parses strictly with no non-finite or negative figure (a CSV with no
``nan`` or ``inf``), and a refusal is ``{"detail": [...]}`` with one line per field, each located (``loc``), never
a traceback.
"""

from __future__ import annotations

import json
import random
from functools import cache
from typing import Any
from urllib.parse import urlencode

from tests.fuzz.hostile import hostile_configs

# pydantic's wording, which an error shows in the tool's own words instead (`… must be a number, got 'x'`)
PYDANTIC_WORDS = ("Input should be", "Value error,", "NoneType", "validation error for", "errors.pydantic.dev")
ANSWERED = {200, 404, 405, 413, 414, 422}  # every status the API answers; 404/405 are FastAPI's own
COUNTS = ["1", "8", "2048", "8k", "32Ki", "0", "-1", "1.5", "1e23", "1e17", "nan", "inf", "", "9" * 5000, "x",
          "1,2", "100000000000"]
MODELS = ["llama-3.1-8b", "llama-3.2-1b", "mixtral-8x7b", "deepseek-v2-lite", "gpt2", "70b", "no-such-model",
          "[red]x[/red]", "../../etc/passwd", "https://huggingface.co/meta-llama/Llama-3.1-8B", "a" * 3000]
GPUS = ["h100", "a100", "rtx-4090", "l40s", "mi300x", "nosuchcard", "", "[/bold]"]
FORMATS = ["json", "csv", "xlsx", "xml", "table", ""]
FIELDS: dict[str, dict[str, list[str]]] = {
    "estimate": {"batch": COUNTS, "prompt_tokens": COUNTS, "output_tokens": COUNTS, "gpus": COUNTS,
                 "dtype": ["bf16", "int4", "gptq-int4", "q4_k_m", "int3", ""], "logits": ["last", "all", "x"],
                 "profile": ["optimized", "hf", "x"], "explain": ["true", "false", "maybe"],
                 "output": ["/tmp/x.csv"], "specs_dir": ["/etc"], "calibration": ["/etc/passwd"],
                 "plot": ["/tmp/p.png"], "force": ["true"]},
    "train": {"batch": COUNTS, "seq_len": COUNTS, "dp": COUNTS, "tp": COUNTS, "pp": COUNTS, "lora_rank": COUNTS,
              "precision": ["amp-bf16", "fp32", "fp9"], "optimizer": ["adamw", "sgd", "adam9"],
              "zero": ["0", "1", "3", "5", "x"], "qlora": ["true", "maybe"], "recompute": ["full", "x"]},
    "plan": {"concurrency": COUNTS, "target_tokens_per_s": COUNTS, "prompt_tokens": COUNTS, "step_tokens": COUNTS,
             "max_nodes": COUNTS, "max_ttft_s": ["0.5", "0", "-1", "nan", "x"], "sort": ["cost", "cards", "x"],
             "headroom": ["0.1", "1.5", "-1", "nan"], "prices": ["/etc/passwd"], "systems": ["hgx-h100", "x", ","]},
    "sweep": {"batch": ["1,8", "1,2,4", "0", "x", ",", "1e23"], "prompt_tokens": ["512,2k", "1", "-1"],
              "output_tokens": ["0,64", "1e9"], "gpus": ["1,2", "3"], "max_points": ["1", "2", "0", "1e17", "x"]},
}


@cache
def client() -> Any:
    """The app over the shipped catalog, as `estimator serve` builds it, behind an in-process client (one per
    process: a worker of the campaign builds it once)."""
    from fastapi.testclient import TestClient

    from estimator.catalog.registry import default_catalog
    from estimator.serve.app import create_app

    return TestClient(create_app(default_catalog()), raise_server_exceptions=False)


def request(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    """One request: an endpoint, fields drawn from valid and hostile values, sometimes a body, an unknown or
    repeated field, an overlong query, a wrong method or path."""
    roll = rng.random()
    if roll < 0.06:
        return ["HTTP", "GET", rng.choice(["/v1/gpus", "/v1/systems", "/v1/models", "/v1/formats"])
                + rng.choice(["", "?format=csv", "?format=xml", "?colour=red", "?format=json&format=csv"])]
    if roll < 0.1:
        return ["HTTP", rng.choice(["GET", "PUT", "DELETE"]), rng.choice(
            ["/", "/nope", "/v1", "/v1/estimate/x", "/static/../../etc/passwd", "/static/%2e%2e/%2e%2e/etc/passwd",
             "/openapi.json", "/v1/models/config"])]
    kind = rng.choice(["estimate", "estimate", "estimate", "train", "plan", "sweep"])
    pairs = [("model", rng.choice(MODELS) if rng.random() < 0.3 else "llama-3.2-1b")]
    if kind != "plan" or rng.random() < 0.9:  # a plan without a card searches every system: a few, not many
        pairs.append(("gpu", rng.choice(GPUS) if rng.random() < 0.2 else rng.choice(GPUS[:5])))
    for field in rng.sample(sorted(FIELDS[kind]), k=rng.randint(0, 3)):
        pairs.append((field, rng.choice(FIELDS[kind][field])))
    if kind == "plan" and not any(f in ("concurrency", "target_tokens_per_s") for f, _ in pairs):
        pairs.append(("concurrency", "8"))
    if rng.random() < 0.3:
        pairs.append(("format", rng.choice(FORMATS)))
    if rng.random() < 0.05:
        pairs.append(rng.choice([("bacth", "8"), ("model", "gpt2"), ("mode", "train"), ("", "x")]))
    query = urlencode(pairs)
    if rng.random() < 0.02:
        query += "&batch=" + "9" * 20_000  # past the query's length limit
    method = "GET"
    if kind != "sweep" and rng.random() < 0.3:
        method = "POST"
        files.append(("body", rng.choice(hostile_configs())[1]))
        query = "&".join(p for p in query.split("&") if not p.startswith("model="))
    path = {"estimate": "/v1/estimate", "train": "/v1/train", "plan": "/v1/plan", "sweep": "/v1/sweep"}[kind]
    if method == "POST" and rng.random() < 0.1:
        path = "/v1/models/config"
    return ["HTTP", method, f"{path}?{query}"]


def send(args: tuple[str, ...], files: dict[str, bytes]) -> tuple[int, str, bytes]:
    """Send the request ``args`` names; its status, content type and body."""
    _, method, target = args
    body = files.get("body")
    headers = {"content-type": "application/json"} if body is not None else {}
    answer = client().request(method, target, content=body, headers=headers)
    return answer.status_code, answer.headers.get("content-type", ""), answer.content


def answer_problems(status: int, content_type: str, body: bytes, bad_numbers: Any) -> list[str]:
    """Every way one answer breaks the API's promise (``bad_numbers`` finds non-finite or negative figures)."""
    text = body.decode("utf-8", errors="replace") if "spreadsheet" not in content_type else ""
    if "Traceback (most recent call last)" in text:
        return ["traceback in the answer"]
    if status >= 500:
        return [f"HTTP {status}: {text[:200]}"]
    if status not in ANSWERED:
        return [f"unexpected HTTP {status}"]
    if status == 200:
        return _document_problems(content_type, body, text, bad_numbers)
    if status in (404, 405) and content_type.startswith("application/json"):
        return []  # FastAPI's own answer to a path or method the API has not
    return _refusal_problems(status, text)


def _document_problems(content_type: str, body: bytes, text: str, bad_numbers: Any) -> list[str]:
    if content_type.startswith("application/json"):
        try:
            return list(bad_numbers(json.loads(text, parse_constant=_reject_constant)))
        except ValueError as error:
            return [f"JSON does not parse strictly: {str(error)[:120]}"]
    if content_type.startswith("text/csv"):
        lowered = f",{text.lower().replace(chr(10), ',')},"
        return [f"'{word}' in CSV" for word in ("nan", "inf", "-inf") if f",{word}," in lowered]
    if "spreadsheet" in content_type:
        return [] if body[:2] == b"PK" else ["xlsx answer is no zip file"]
    return [] if content_type.startswith(("text/html", "text/css", "text/javascript")) else [
        f"200 of unexpected type {content_type!r}"]


def _refusal_problems(status: int, text: str) -> list[str]:
    try:
        detail = json.loads(text)["detail"]
    except (ValueError, KeyError, TypeError):
        return [f"HTTP {status} without a JSON detail: {text[:200]!r}"]
    if not isinstance(detail, list) or not detail:
        return [f"HTTP {status} detail is not a list of fields: {text[:200]!r}"]
    found = []
    for entry in detail:
        if not isinstance(entry, dict) or set(entry) != {"loc", "msg", "type"}:
            found.append(f"refusal entry is not loc/msg/type: {str(entry)[:200]}")
        elif "\n" in entry["msg"] or not entry["msg"].strip():
            found.append(f"refusal message is not one line: {entry['msg'][:200]!r}")
        elif any(words in entry["msg"] for words in PYDANTIC_WORDS):
            found.append(f"pydantic's words in the refusal: {entry['msg'][:200]!r}")
    return found


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} in JSON")
