"""Fit the `hf` profile's ``host_per_op_s``: the host's cost of one counted operation, least squares over seed 0's
host-bound `fit` prefills and eager decodes of tests/data/measured/random; and check the count itself
(``eager_ops_per_layer``, ``eager_ops_outside_layers``, ``eager_ops_per_math_layer``) against the operations each
row's step dispatched.

    python -m lab.fit.host_per_op_s      # the fitted figure beside the shipped one, and how many rows count exactly
"""

from __future__ import annotations

from typing import Any

from estimator import default_catalog
from estimator.catalog.profiles import EfficiencyProfile
from estimator.inference.workload import InferenceWorkload
from estimator.model.attention_kernels import math_attention_layers
from estimator.model.phases import eager_ops
from lab.accuracy.random_points import DATA, _inference, load, model_of, split_of

LAYERS_ONLY_PER_OP_S = 1.694e-5  # the least-squares figure with the layers' operations alone


def _workload(row: dict[str, Any], profile: EfficiencyProfile) -> InferenceWorkload:
    fmt = default_catalog().formats.get(row.get("dtype", "bf16"))
    return InferenceWorkload(batch=row["batch"], prompt_tokens=row.get("prompt", row.get("context", 1)),
                             output_tokens=1, weight_format=fmt, kv_format=fmt, profile=profile)


def counted(row: dict[str, Any], profile: EfficiencyProfile) -> tuple[int, int] | None:
    """(operations the row's step dispatched, the profile's count of them) for a prefill or decode row that counted
    them; None for the others."""
    key = {"prefill": "prefill_ops", "decode": "decode_ops"}.get(row.get("phase", ""))
    if row.get("kind") != "model" or row.get("error") or key is None or not row.get(key):
        return None
    arch = model_of(row).arch
    assert arch is not None
    decode = row["phase"] == "decode"
    math = 0 if decode else math_attention_layers(arch, profile, fp32=row["dtype"] == "fp32", tokens=row["prompt"])
    return int(row[key]), eager_ops(arch, _workload(row, profile), decode=decode, math_layers=math)


def outside_profile(profile: EfficiencyProfile) -> EfficiencyProfile:
    """``profile`` counting the layers' operations only, at the cost per operation that count fits."""
    return profile.model_copy(update={"eager_ops_outside_layers": {}, "eager_ops_per_math_layer": 0,
                                      "host_per_op_s": LAYERS_ONLY_PER_OP_S})


def per_op_fit(rows: list[dict[str, Any]], profile: EfficiencyProfile) -> tuple[float, int]:
    """(least squares seconds per counted operation, rows): the measured step of seed 0's `fit` prefill and eager
    decode rows that ``profile`` holds host-bound (its host-bound note), against the operations it counts."""
    catalog = default_catalog()
    xs, ys = [], []
    for row in rows:
        if row.get("seed", 0) != 0 or split_of(row) != "fit" or row.get("kind") != "model" or row.get("error"):
            continue
        if row["phase"] == "decode":
            report = _inference(catalog, model_of(row), row, "hf", row["batch"], row["context"], 1,
                                profiles=lambda _: profile)
            phase, measured = "decode step", row["eager"]["median_s"]
        elif row["phase"] == "prefill" and "latency" in row:
            logits = "last" if row["logits_to_keep"] == 1 else "all"
            report = _inference(catalog, model_of(row), row, "hf", row["batch"], row["prompt"], 0, logits,
                                profiles=lambda _: profile)
            phase, measured = "prefill", row["latency"]["median_s"]
        else:
            continue
        note = next((n.values for n in report.assumptions if n.code.value == "host-bound"
                     and n.values["phase"] == phase), None)
        if note is not None and note["operations"]:
            xs.append(float(note["operations"]))
            ys.append(float(measured))
    return sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs), len(xs)


def main() -> None:
    hf = default_catalog().profiles.get("hf")
    rows = load(sorted(DATA.glob("*.jsonl")))
    pairs = [pair for row in rows if (pair := counted(row, hf))]
    fitted, used = per_op_fit(rows, hf)
    print(f"operations counted exactly: {sum(m == p for m, p in pairs)} of {len(pairs)} steps")
    print(f"host_per_op_s: fitted {fitted:.4g} s on {used} rows, shipped {hf.host_per_op_s:.4g} s")


if __name__ == "__main__":
    main()
