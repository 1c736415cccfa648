"""Predicted vs measured for tensor-parallel runs (rows of kind "tp" written by lab/measure/tensor_parallel.py).

    python -m lab.accuracy.tp_points tests/data/measured/h200x2-tp.jsonl

For each case: weights and KV cache per GPU (exact), NVML used per GPU vs the estimate's per-GPU total, decode
step (CUDA graph) vs the optimized profile, prefill vs the optimized profile; relative error of each.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

from estimator import InferenceWorkload, default_catalog, estimate
from estimator.model.memory import kv_cache_bytes, kv_heads_divisor, sharded_weights_bytes


def rows(path: Path) -> Iterator[dict[str, object]]:
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if row.get("kind") == "tp" and "error" not in row:
                yield row


def compare(path: Path) -> Iterator[tuple[str, str, float, float]]:
    catalog = default_catalog()
    bf16 = catalog.formats.get("bf16")
    h200 = catalog.gpus.get("h200")
    for row in rows(path):
        name, tp, batch, ctx = str(row["model"]), int(row["tp"]), int(row["batch"]), int(row["context"])  # type: ignore[call-overload]
        model = catalog.models.get(name)
        assert model.arch is not None
        case = f"{name} tp{tp} b{batch} ctx{ctx}"
        w = InferenceWorkload(batch=batch, prompt_tokens=ctx, output_tokens=1, weight_format=bf16, kv_format=bf16,
                              tensor_parallel=tp, profile=catalog.profiles.get("optimized"))
        report = estimate(model, h200, w)
        yield case, "weights per GPU", sharded_weights_bytes(model.arch, bf16, tp), float(row["weights_bytes_rank"])  # type: ignore[arg-type]
        kv = kv_cache_bytes(model.arch, ctx + 8, batch, bf16, kv_heads_divisor=kv_heads_divisor(model.arch, tp))
        yield case, "KV per GPU (cache_len = ctx + 8)", kv, float(row["kv_bytes_rank"])  # type: ignore[arg-type]
        used = row.get("nvml_used_gpu_all")
        if isinstance(used, list) and all(isinstance(u, int) for u in used):
            yield case, "NVML used per GPU (max)", report.memory.per_gpu_bytes, float(max(used))
        graph = row.get("decode_graph")
        if isinstance(graph, dict) and report.time.decode_step_s is not None:
            yield case, "decode step (graph) optimized", report.time.decode_step_s, float(graph["median_s"])
            yield case, "decode bound <= measured", report.time.decode_step_bound_s or 0.0, float(graph["median_s"])
        prefill = row.get("prefill")
        if isinstance(prefill, dict):
            pre = InferenceWorkload(batch=batch, prompt_tokens=ctx, output_tokens=0, weight_format=bf16,
                                    kv_format=bf16, tensor_parallel=tp, profile=catalog.profiles.get("optimized"))
            r = estimate(model, h200, pre)
            yield case, "prefill optimized", r.time.prefill_s, float(prefill["median_s"])
            yield case, "prefill bound <= measured", r.time.prefill_bound_s, float(prefill["median_s"])


def main() -> None:
    for path in sys.argv[1:]:
        for case, term, predicted, measured in compare(Path(path)):
            print(f"{case:34s} {term:34s} predicted {predicted:14.6g} measured {measured:14.6g} "
                  f"error {(predicted - measured) / measured:+7.1%}")


if __name__ == "__main__":
    main()
