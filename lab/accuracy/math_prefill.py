"""What the math SDPA kernel's prefills measured (lab/measure/math_prefill.py rows), beside the estimate.

    python -m lab.accuracy.math_prefill FILE.jsonl [--kernels] [--split fit|held-out|all]

For each ``kind=sdpa_math`` row (SDPA alone): the kernels by kind and their time per score. For each prefill row of
a random Falcon-style architecture: the ``hf`` estimate on the card the row names beside the measured median (the
``latency`` forward), and with ``--kernels`` its kernels by name.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator import default_catalog
from estimator.catalog.registry import model_from_mapping
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload

# a kernel's part of the math kernel by its name (the first mark found; torch 2.11 on CUDA)
PARTS = (("gemm", ("gemm", "cutlass", "xmma", "nvjet", "cublas")), ("softmax", ("softmax",)),
         ("where", ("where",)), ("isneginf", ("isneginf", "neginf")), ("all", ("reduce_kernel",)),
         ("add", ("add",)), ("mul", ("mul",)), ("copy", ("copy",)), ("fill", ("fill",)))


def part(name: str) -> str:
    lowered = name.lower()
    return next((p for p, marks in PARTS if any(m in lowered for m in marks)), "other")


def by_part(kernels: list[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in kernels:
        out[part(k["name"])] = out.get(part(k["name"]), 0.0) + k["s"]
    return out


def gpu_of(rows: list[dict[str, Any]]) -> str:
    name = next((r.get("name", "") for r in rows if r.get("kind") == "device"), "")
    return "h100" if "H100" in name else "h200"


def predicted(row: dict[str, Any], gpu: str) -> float:
    catalog = default_catalog()
    model = model_from_mapping({"name": row["model"], "config": row["config"]}, Path("random"))
    fmt = catalog.formats.get(row["dtype"])
    workload = InferenceWorkload(batch=row["batch"], prompt_tokens=row["prompt"], output_tokens=0, weight_format=fmt,
                                 kv_format=fmt, logits="last", profile=catalog.profiles.get("hf"))
    return float(estimate(model, catalog.gpus.get(gpu), workload).time.prefill_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--kernels", action="store_true")
    parser.add_argument("--split", default="all")
    args = parser.parse_args()
    if not args.file.is_file():
        parser.error(f"no such file: {args.file}")
    rows = [json.loads(line) for line in args.file.read_text(encoding="utf-8").splitlines() if line.strip()]
    gpu = gpu_of(rows)
    for r in rows:
        if r.get("kind") == "sdpa_math" and "kernels_by_name" in r:
            scores = r["batch"] * r["heads"] * r["prompt"] ** 2
            parts = by_part(r["kernels_by_name"])
            print(f"sdpa {r['dtype']} b{r['batch']} a{r['heads']}/{r.get('kv_heads', 1)} s{r['prompt']} "
                  f"d{r['head_dim']}: wall {r['gpu_s'] * 1e3:.3f} ms, ps/score: "
                  + ", ".join(f"{k} {v / scores * 1e12:.2f}" for k, v in sorted(parts.items(), key=lambda x: -x[1])))
    errors = []
    for r in rows:
        if r.get("kind") != "model" or r.get("phase") != "prefill" or "latency" not in r:
            continue
        if args.split != "all" and r["split"] != args.split:
            continue
        p, m = predicted(r, gpu), r["latency"]["median_s"]
        errors.append((p - m) / m)
        cfg = r["config"]
        print(f"{r['model']} {r['split']:8} {r['dtype']} h{cfg['hidden_size']} a{cfg['num_attention_heads']} "
              f"L{cfg['num_hidden_layers']} b{r['batch']} s{r['prompt']}: pred {p * 1e3:8.2f} ms meas "
              f"{m * 1e3:8.2f} ms {errors[-1]:+.1%}  kernels {r['issue'].get('kernel_s', 0) * 1e3:.2f} ms")
        if args.kernels:
            for k in r.get("kernels_by_name", [])[:12]:
                print(f"    {k['s'] * 1e3:8.3f} ms {k['count']:4d} {part(k['name']):8} {k['name'][:100]}")
    if errors:
        print(f"{len(errors)} prefills: median |error| {statistics.median(abs(e) for e in errors):.1%}, "
              f"within 15%: {sum(abs(e) <= 0.15 for e in errors)}")


if __name__ == "__main__":
    main()
