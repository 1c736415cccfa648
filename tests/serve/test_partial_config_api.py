"""The HTTP API answers a partial config.json as the CLI does: refused naming the size fields it lacks (422, located
at the body), or answered with the defaults it filled in among the report's warnings."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi.testclient import TestClient


def test_partial_llama_config_body_names_missing_fields(client: TestClient) -> None:
    answer = client.post("/v1/estimate?gpu=h100", content=b'{"model_type": "llama"}')
    assert answer.status_code == 422
    (entry,) = answer.json()["detail"]
    assert entry["loc"] == ["body"]
    for name in ("hidden_size", "intermediate_size", "num_attention_heads", "num_hidden_layers", "vocab_size"):
        assert name in entry["msg"]


def test_config_body_without_kv_heads_warns_of_the_default(client: TestClient) -> None:
    config = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
              "num_attention_heads": 32, "vocab_size": 128256}
    answer = client.post("/v1/estimate?gpu=h100", content=json.dumps(config).encode())
    assert answer.status_code == 200
    texts = {w["code"]: w["text"] for w in answer.json()["warnings"]}
    assert "num_key_value_heads = num_attention_heads (32)" in texts["defaulted-fields"]


def test_config_body_with_an_unknown_architectural_field_names_it(client: TestClient) -> None:
    config = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "moe_latent_size": 1024}
    answer = client.post("/v1/estimate?gpu=h100", content=json.dumps(config).encode())
    assert answer.status_code == 200
    texts = {w["code"]: w["text"] for w in answer.json()["warnings"]}
    assert "moe_latent_size" in texts["unread-fields"]
