"""Predicted vs measured on the H200 reference points (tests/data/measured/reference/h200-measured.jsonl).

    python -m lab.accuracy.reference_points [path/to/h200-measured.jsonl]

Prints one line per measured point: the estimator's prediction, the measurement and the relative error, for
weights, KV cache, prefill activation peak, prefill latency (hf profile) and decode step (optimized profile for
the lean CUDA-graph decode, hf profile for the Hugging Face eager decode).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from estimator import InferenceWorkload, default_catalog, estimate
from estimator.catalog.architecture import ModelSpec
from estimator.model.footprint import activation_peak

DEFAULT = Path(__file__).resolve().parents[2] / "tests/data/measured/reference/h200-measured.jsonl"


@dataclass(frozen=True)
class Point:
    case: str
    term: str
    predicted: float
    measured: float

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured


def _workload(profile: str, batch: int, prompt: int, output: int, logits: str = "last") -> InferenceWorkload:
    catalog = default_catalog()
    bf16 = catalog.formats.get("bf16")
    return InferenceWorkload(batch=batch, prompt_tokens=prompt, output_tokens=output, weight_format=bf16,
                             kv_format=bf16, logits=logits, profile=catalog.profiles.get(profile))  # type: ignore[arg-type]


def points(path: Path) -> Iterator[Point]:
    catalog = default_catalog()
    h200 = catalog.gpus.get("h200")
    for line in path.read_text().splitlines():
        row = json.loads(line)
        kind = row["kind"]
        if kind not in ("model", "lean_decode"):
            continue
        model: ModelSpec = catalog.models.get(row["model"])
        assert model.arch is not None
        if kind == "lean_decode":
            ctx, batch = row["context"], row["batch"]
            report = estimate(model, h200, _workload("optimized", batch, ctx - 1, 1))
            assert report.time.decode_step_s is not None
            yield Point(f"{model.name} lean b{batch} ctx{ctx}", "decode_step_s optimized",
                        report.time.decode_step_s, row["graph"]["median_s"])
            continue
        phase = row["phase"]
        if phase == "load":
            report = estimate(model, h200, _workload("hf", 1, 1, 0))
            yield Point(f"{model.name} load", "weights_bytes", report.memory.weights_bytes, row["param_bytes"])
        elif phase == "prefill":
            batch, prompt, keep = row["batch"], row["prompt"], row["logits_to_keep"]
            logits = "last" if keep == 1 else "all"
            w = _workload("hf", batch, prompt, 0, logits)
            report = estimate(model, h200, w)
            case = f"{model.name} prefill b{batch} s{prompt} logits={logits}"
            assert report.memory.kv_cache_bytes is not None
            yield Point(case, "kv_cache_bytes", report.memory.kv_cache_bytes, row["kept_after"])
            peak = activation_peak(model.arch, catalog.profiles.get("hf"), batch, prompt, element_bytes=2,
                                   logits_all=logits == "all").bytes
            yield Point(case, "activation_bytes", peak, row["peak_minus_before"] - row["kept_after"])
            if "latency" in row:
                yield Point(case, "prefill_s hf", report.time.prefill_s, row["latency"]["median_s"])
                yield Point(case, "prefill_bound_s <= measured", report.time.prefill_bound_s,
                            row["latency"]["median_s"])
        elif phase == "decode":
            ctx, batch = row["cache_len"], row["batch"]
            report = estimate(model, h200, _workload("hf", batch, row["context"], 1))
            assert report.time.decode_step_s is not None
            yield Point(f"{model.name} hf decode b{batch} ctx{row['context']}", "decode_step_s hf eager",
                        report.time.decode_step_s, row["eager"]["median_s"])


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    for p in points(path):
        print(f"{p.case:45s} {p.term:28s} predicted {p.predicted:14.6g} measured {p.measured:14.6g} "
              f"error {p.error:+7.1%}")


if __name__ == "__main__":
    main()
