"""Predicted vs measured for every ``kind=train`` row of a measurement file (same format as
tests/data/measured/reference/h200-measured.jsonl; see its README h200-measured.md).

    python -m lab.accuracy.training_points [path/to/measurements.jsonl] [--gpu h200]

For each row: the estimator's steady-state peak of torch-allocated bytes (``memory.peak_tensor_bytes``; the
measurement's ``steady_peak`` is the peak minus what was allocated before the model was built) and the step time
under the ``hf`` profile, with relative errors, then the terms that make up the predicted peak. Row keys used:
model, mode (amp | bf16 | fp32 | amp-fp16), batch, seq, checkpointing, optimizer, attn_impl, steady_peak,
latency.median_s, and optionally grad_accum, lora_rank, qlora.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from estimator import default_catalog
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.registry import model_from_mapping
from estimator.errors import EstimatorError
from estimator.training.estimate import estimate_training
from estimator.training.report import TrainingReport
from estimator.training.workload import TrainingWorkload

DEFAULT = Path(__file__).resolve().parents[2] / "tests/data/measured/reference/h200-measured.jsonl"
_PRECISION = {"amp": "amp-bf16", "amp-bf16": "amp-bf16", "amp-fp16": "amp-fp16", "bf16": "bf16", "fp32": "fp32"}
_ATTENTION = {"sdpa": "sdpa", "eager": "eager", "flash_attention_2": "flash", "flash": "flash"}


def _optimizer(text: str) -> str:
    t = text.lower()
    if "8bit" in t or "8-bit" in t:
        return "adam-8bit"
    if "fused" in t:
        return "adamw-fused"
    for name in ("adafactor", "lion", "sgd"):
        if name in t:
            return "sgd-momentum" if name == "sgd" and "momentum" in t else name
    return "adamw"


def predict(row: dict[str, Any], gpu: str, profile: EfficiencyProfile | None = None) -> TrainingReport:
    """The training estimate of a measured row under ``profile`` (the shipped `hf` one by default)."""
    catalog = default_catalog()
    workload = TrainingWorkload(
        batch=row["batch"], seq_len=row["seq"], grad_accum=row.get("grad_accum", 1),
        precision=_PRECISION[row["mode"]],  # type: ignore[arg-type]
        optimizer=_optimizer(row.get("optimizer", "AdamW")),  # type: ignore[arg-type]
        recompute="full" if row.get("checkpointing") else "none",
        attention=_ATTENTION[row.get("attn_impl", "sdpa")],  # type: ignore[arg-type]
        lora_rank=row.get("lora_rank"),
        qlora=catalog.formats.get("nf4-dq") if row.get("qlora") else None,
        profile=profile or catalog.profiles.get("hf"),
    )
    # a row that carries its config.json (random architectures) is built from it, others are catalog models
    model = (model_from_mapping({"name": row["model"], "config": row["config"]}, Path("measured")) if "config" in row
             else catalog.models.get(row["model"]))
    return estimate_training(model, catalog.gpus.get(gpu), workload)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[DEFAULT])
    parser.add_argument("--gpu", default="h200")
    args = parser.parse_args(argv)
    worst = 0.0
    lines = [line for path in args.paths for line in path.read_text().splitlines() if line.strip()]
    for line in lines:
        row = json.loads(line)
        if row.get("kind") != "train":
            continue
        case = (f"{row['model']} {row['mode']} b{row['batch']} s{row['seq']} "
                f"{'ckpt' if row.get('checkpointing') else 'no-ckpt'} {row.get('attn_impl', 'sdpa')} "
                f"{row.get('optimizer', '')}")
        try:
            report = predict(row, args.gpu)
        except EstimatorError as error:
            print(f"{case}: cannot estimate: {error}")
            continue
        m = report.memory
        error = m.peak_tensor_bytes / row["steady_peak"] - 1
        worst = max(worst, abs(error))
        print(f"{case}\n  steady peak: predicted {m.peak_tensor_bytes:,} B, measured {row['steady_peak']:,} B, "
              f"error {error:+.2%} (peak in {m.peak_phase})")
        if "latency" in row:
            measured = row["latency"]["median_s"]
            print(f"  step time (hf): predicted {report.time.step_s * 1e3:.1f} ms, measured {measured * 1e3:.1f} ms, "
                  f"error {report.time.step_s / measured - 1:+.2%}")
        terms = [("weights", m.weights_bytes), ("gradients", m.gradient_bytes if m.peak_phase != "forward-backward"
                                                  else 0), ("master", m.master_weights_bytes),
                 ("optimizer states", m.optimizer_bytes), ("autocast copies", m.autocast_copy_bytes),
                 ("saved activations (layers + output)", m.activation_bytes),
                 ("loss gradients at backward start", m.loss_backward_bytes)]
        for name, value in terms:
            if value:
                print(f"    {name:<38} {value:>16,} B")
    print(f"worst |error| on steady peak: {worst:.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
