"""What every report shares: the frozen pydantic base, the schema version, and the flattening that CSV rows use.

Every report (inference, training, plan, sweep rows, validate, gpu) is a frozen model; its JSON is
``model_dump(mode="json")`` and its CSV row is `flatten` of that, so the two always hold the same fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = "1.0"


class Frozen(BaseModel):
    """Base of every report model: immutable, and no field the schema does not name."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings become dotted keys; lists of scalars join with '; '; lists of objects become JSON."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, list | tuple):
            if all(not isinstance(v, Mapping | list | tuple) for v in value):
                out[name] = "; ".join(str(v) for v in value)
            else:
                out[name] = json.dumps(value, separators=(",", ":"))
        else:
            out[name] = value
    return out
