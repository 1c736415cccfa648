"""`plan`'s search settings have ceilings of their own (estimator/request/options.py `CEILINGS` says why each):
`--step-tokens 1e17` or `--max-nodes 1e17` is refused in one line at its field, in the CLI and the HTTP API,
before any system is searched; the ceiling itself is accepted."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from estimator.request.convert import count
from estimator.request.errors import FieldInvalid
from estimator.request.options import CEILINGS
from tests.conftest import CliResult

PLAN = ("plan", "--model", "llama-3.1-8b", "--concurrency", "4", "--gpu", "h100")


@pytest.mark.parametrize(("flag", "message"), [
    ("--step-tokens", "--step-tokens must be at most 101,000,000, got 100,000,000,000,000,000"),
    ("--max-nodes", "--max-nodes must be at most 4,096, got 100,000,000,000,000,000")])
def test_plan_step_tokens_and_max_nodes_past_their_ceiling_are_one_line(cli: Callable[..., CliResult], flag: str,
                                                                       message: str) -> None:
    done = cli(*PLAN, flag, "1e17")
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr == f"error: {message}\n"


@pytest.mark.parametrize("field", sorted(CEILINGS))
def test_a_ceiling_is_the_largest_value_accepted(field: str) -> None:
    limit = CEILINGS[field]
    assert count(field, str(limit), at_most=limit) == limit
    with pytest.raises(FieldInvalid) as refused:
        count(field, str(limit + 1), at_most=limit)
    assert refused.value.field == field


def test_plan_ceilings_are_located_at_the_field_in_the_api() -> None:
    pytest.importorskip("fastapi", reason="estimator serve needs the [serve] extra")
    pytest.importorskip("httpx2", reason="FastAPI's TestClient needs httpx2")
    from fastapi.testclient import TestClient

    from estimator.catalog.registry import default_catalog
    from estimator.serve.app import create_app

    client = TestClient(create_app(default_catalog()))
    for field in sorted(CEILINGS):
        answer = client.get(f"/v1/plan?model=llama-3.1-8b&concurrency=4&gpu=h100&{field}=1e17")
        assert answer.status_code == 422
        (entry,) = answer.json()["detail"]
        assert entry["loc"] == ["query", field] and "must be at most" in entry["msg"]
