"""Fuzz-campaign class 'NaN / infinity / absurd numbers in reports': every number read from a file or a flag has a
physical ceiling stated in the schema. docs/schema/specs/ ships the JSON Schema of every input (GPU, system, quant,
profile, family, model, prices, calibration, workloads), generated from the models that read them
(`pytest --update-schema` rewrites them); every numeric field in them has a finite maximum."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from estimator.render.schema import SPEC_NAMES, spec_schema
from tests.render.shipped import assert_shipped_schema

SHIPPED = Path(__file__).resolve().parents[2] / "docs" / "schema" / "specs"


def _text(name: str) -> str:
    return json.dumps(spec_schema(name), indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_shipped_spec_schema_is_the_generated_one(name: str, update_schema: bool) -> None:
    assert_shipped_schema(SHIPPED / f"{name}.json", _text(name), update_schema)


def _unbounded(node: Any, defs: dict[str, Any], where: str, seen: frozenset[str]) -> list[str]:
    """Every numeric schema under ``node`` with no finite maximum (an enum or a constant is bounded)."""
    if isinstance(node, list):
        return [found for item in node for found in _unbounded(item, defs, where, seen)]
    if not isinstance(node, dict):
        return []
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return [] if name in seen else _unbounded(defs[name], defs, f"{where}<{name}>", seen | {name})
    found = []
    if node.get("type") in ("number", "integer") and "enum" not in node and "const" not in node:
        top = node.get("maximum", node.get("exclusiveMaximum"))
        if not isinstance(top, int | float) or not math.isfinite(top):
            found.append(where)
    for key, value in node.get("properties", {}).items():
        found += _unbounded(value, defs, f"{where}.{key}", seen)
    for key in ("items", "additionalProperties", "prefixItems", "anyOf", "oneOf", "allOf"):
        found += _unbounded(node.get(key), defs, f"{where}[{key}]", seen)
    return found


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_every_number_of_an_input_has_a_finite_ceiling(name: str) -> None:
    schema = spec_schema(name)
    assert _unbounded(schema, schema.get("$defs", {}), name, frozenset()) == []


def test_the_walk_finds_an_unbounded_number() -> None:
    """The check above can fail: a number with a minimum only, inside a dict's values, is found."""
    schema = {"type": "object", "properties": {"a": {"type": "object", "additionalProperties":
                                                     {"type": "number", "exclusiveMinimum": 0}}}}
    assert _unbounded(schema, {}, "x", frozenset()) == ["x.a[additionalProperties]"]
