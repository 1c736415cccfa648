"""Predicted vs measured for the random architectures of lab/measure/random_architectures.py
(tests/data/measured/random).

    python -m lab.accuracy.random_points [FILES ...] [--split SPLIT|all] [--term TERM] [--cases] [--calibration host]

Each row carries its config.json, so the model is built from it (no catalog entry). Predictions use the shipped
profiles in the row's dtype: ``hf`` for prefill, eager decode and training, ``hf-graph`` for the HF decode
captured in a CUDA graph, ``optimized`` for the lean decode. The split: seed 0's rows carry ``split`` (``fit``
rows may have shaped a mechanism, ``held-out`` rows never did); every row of seeds 1 and 2 is held out (those
were measured in the same device call but not looked at until the mechanisms were written); rows of the seeds in
``FRESH_SEEDS`` are ``fresh``: measured in a later device call, before the host, fp32-kernel and graph
mechanisms were written, and judged apart. A seed measured in a call that ran `estimator calibrate` first
(``h200-…-seed<N>-calibration.yaml`` beside its rows: seeds 4 and 5) is held out twice over: ``seed N`` predicts it
with the shipped profiles, ``seed N cal`` with that call's calibration applied to them (what a user who ran
`calibrate` on that machine gets; ``--calibration host`` applies only its host cost per operation). Seed 5's rows
carry ``split`` as seed 0's do: its ``fit`` rows join ``fit``, only its ``held-out`` rows are ``seed 5``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator import default_catalog
from estimator.catalog.architecture import ModelSpec
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.registry import Catalog, model_from_mapping
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload
from estimator.live.calibration import GpuCalibration, apply_calibration, load_calibration
from estimator.training.estimate import estimate_training
from estimator.training.workload import TrainingWorkload

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "measured" / "random"
FIT_SEED = 0
FRESH_SEEDS = (3,)
CALIBRATED_SEEDS = (4, 5, 6)  # seeds whose call ran `estimator calibrate` first (h200-…-seed<N>-calibration.yaml)
# seed 5 carries the kernels' busy time; its `fit` rows may shape a mechanism and join `fit`, its
# `held-out` rows are judged as `seed 5` (and `seed 5 cal`)
SPLIT_SEEDS = (5,)
# seed 7: lean decodes only (random_architectures.py --lean), measured after `optimized`'s decode_attention was set
LEAN_SEEDS = (7,)
# seed 8: training steps only (random_architectures.py --inference 0), measured after the training step's
# operation count was committed
TRAIN_SEEDS = (8,)
# seeds 9 and 10: prefills only (random_architectures.py --prefill-only); seed 9 measured before the GEMM rule was
# written and read after it was committed, seed 10 measured after it and the strided elementwise rate were
# committed (e8ad999)
PREFILL_SEEDS = (9, 10, 11)
SPLITS = ("fit", "held-out", "fresh", *(f"seed {n}{cal}" for n in CALIBRATED_SEEDS for cal in ("", " cal")),
          *(f"seed {n}" for n in (*LEAN_SEEDS, *TRAIN_SEEDS, *PREFILL_SEEDS)))
Profiles = Callable[[str], EfficiencyProfile]
_PRECISION = {"amp": "amp-bf16", "bf16": "bf16", "fp32": "fp32"}
# Bounds (datasheet peaks, no profile) judged as the catalog's are: never above a measurement of the same case.
BOUNDS = ("prefill bound", "decode bound", "train step bound")
TARGETS = {"prefill activation": 0.05, "prefill requested": 0.05, "train steady peak": 0.05, "train step": 0.15,
           "prefill_s": 0.15, "decode hf": 0.30, "decode hf-graph": 0.30, "decode optimized": 0.10}


@dataclass(frozen=True)
class RandomPoint:
    model: str  # e.g. s0/rand-i03 (seed / name)
    family: str
    dtype: str
    case: str
    term: str
    predicted: float
    measured: float
    split: str

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured


def load(paths: list[Path]) -> list[dict[str, Any]]:
    return [json.loads(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def split_of(row: dict[str, Any]) -> str:
    seed = row.get("seed", 0)
    if seed in SPLIT_SEEDS and row.get("split") == "fit":
        return "fit"
    if seed in (*CALIBRATED_SEEDS, *LEAN_SEEDS, *TRAIN_SEEDS, *PREFILL_SEEDS):
        return f"seed {seed}"
    if seed in FRESH_SEEDS:
        return "fresh"
    return str(row.get("split", "held-out")) if seed == FIT_SEED else "held-out"


def model_of(row: dict[str, Any]) -> ModelSpec:
    return model_from_mapping({"name": f"s{row.get('seed', 0)}/{row['model']}", "config": row["config"]},
                              Path("random"))


def calibration_of(seed: int, data: Path = DATA) -> GpuCalibration | None:
    """The calibration `estimator calibrate` wrote at the start of the call that measured ``seed``, if it ran."""
    found = sorted(data.glob(f"*-seed{seed}-calibration.yaml"))
    return next(iter(load_calibration(found[0]).gpus.values())) if found else None


def calibrated(catalog: Catalog, entry: GpuCalibration, only_host: bool = False) -> Profiles:
    """The catalog's profiles with ``entry`` applied (all its overrides, or only the host cost per operation)."""
    if only_host:
        keep = {"host_per_op_s": entry.profile_overrides["host_per_op_s"]}
        entry = entry.model_copy(update={"profile_overrides": keep})
    return lambda name: apply_calibration(catalog.profiles.get(name), entry, "run calibration")


def _inference(catalog: Catalog, model: ModelSpec, row: dict[str, Any], profile: str, batch: int, prompt: int,
               output: int, logits: str = "last", profiles: Profiles | None = None) -> Any:
    fmt = catalog.formats.get(row.get("dtype", "bf16"))
    chosen = (profiles or catalog.profiles.get)(profile)
    workload = InferenceWorkload(batch=batch, prompt_tokens=prompt, output_tokens=output, weight_format=fmt,
                                 kv_format=fmt, logits=logits, profile=chosen)  # type: ignore[arg-type]
    return estimate(model, catalog.gpus.get("h200"), workload)


def hf_report(catalog: Catalog, row: dict[str, Any], profiles: Profiles | None = None) -> Any:
    """The `hf` estimate of a prefill row (its batch, prompt and kept logits) or an HF decode row (one token at its
    context)."""
    model = model_of(row)
    if row["phase"] == "prefill":
        logits = "last" if row["logits_to_keep"] == 1 else "all"
        return _inference(catalog, model, row, "hf", row["batch"], row["prompt"], 0, logits, profiles)
    return _inference(catalog, model, row, "hf", row["batch"], row["context"], 1, profiles=profiles)


def _model_points(catalog: Catalog, row: dict[str, Any], profiles: Profiles | None = None
                  ) -> Iterator[tuple[str, str, float, float]]:
    model = model_of(row)
    if row["kind"] == "lean_decode":
        report = _inference(catalog, model, {"dtype": "bf16"}, "optimized", row["batch"], row["context"] - 1, 1,
                            profiles=profiles)
        case = f"b{row['batch']} ctx{row['context']}"
        yield case, "decode optimized", report.time.decode_step_s, row["graph"]["median_s"]
        yield case, "decode bound", report.time.decode_step_bound_s, row["graph"]["median_s"]
        return
    if row["phase"] == "prefill":
        batch, prompt, keep = row["batch"], row["prompt"], row["logits_to_keep"]
        logits = "last" if keep == 1 else "all"
        case = f"b{batch} s{prompt} logits={logits}"
        report = hf_report(catalog, row, profiles)
        yield case, "prefill activation", report.memory.activation_bytes, row["peak_minus_before"] - row["kept_after"]
        if "requested_peak_minus_before" in row:  # the tensors' bytes, before the caching allocator's blocks
            yield (case, "prefill requested", report.memory.activation_bytes,
                   row["requested_peak_minus_before"] - row["requested_kept_after"])
        if "latency" in row:
            yield case, "prefill_s", report.time.prefill_s, row["latency"]["median_s"]
            yield case, "prefill bound", report.time.prefill_bound_s, row["latency"]["median_s"]
    elif row["phase"] == "decode":
        batch, ctx = row["batch"], row["context"]
        report = hf_report(catalog, row, profiles)
        yield f"b{batch} ctx{ctx}", "decode hf", report.time.decode_step_s, row["eager"]["median_s"]
        fastest = min(row["eager"]["median_s"], row.get("graph", {}).get("median_s", float("inf")))
        yield f"b{batch} ctx{ctx}", "decode bound", report.time.decode_step_bound_s, fastest
        if "graph" in row and any(data.get("name") == "hf-graph" for _, data in catalog.profiles.entries):
            graph = _inference(catalog, model, row, "hf-graph", batch, ctx, 1, profiles=profiles)
            yield f"b{batch} ctx{ctx}", "decode hf-graph", graph.time.decode_step_s, row["graph"]["median_s"]


def _train_points(catalog: Catalog, row: dict[str, Any], profiles: Profiles | None = None
                  ) -> Iterator[tuple[str, str, float, float]]:
    workload = TrainingWorkload(batch=row["batch"], seq_len=row["seq"], precision=_PRECISION[row["mode"]],  # type: ignore[arg-type]
                                optimizer="adamw", recompute="full" if row["checkpointing"] else "none",
                                attention="sdpa", profile=(profiles or catalog.profiles.get)("hf"))
    report = estimate_training(model_of(row), catalog.gpus.get("h200"), workload)
    case = f"{row['mode']} b{row['batch']} s{row['seq']}{' ckpt' if row['checkpointing'] else ''}"
    yield case, "train steady peak", report.memory.peak_tensor_bytes, row["steady_peak"]
    yield case, "train step", report.time.step_s, row["latency"]["median_s"]
    yield case, "train step bound", report.time.step_bound_s, row["latency"]["median_s"]


def points(rows: list[dict[str, Any]], catalog: Catalog | None = None, *, data: Path = DATA,
           only_host: bool = False) -> list[RandomPoint]:
    """Every measured figure beside its prediction; rows of a calibrated seed twice (shipped, then calibrated)."""
    catalog = catalog or default_catalog()
    entries = {seed: calibration_of(seed, data) for seed in CALIBRATED_SEEDS}
    runs: dict[int, Profiles] = {seed: calibrated(catalog, e, only_host) for seed, e in entries.items() if e}
    out = []
    for row in rows:
        if row.get("error") or row["kind"] not in ("model", "lean_decode", "train"):
            continue
        if row["kind"] == "model" and row["phase"] == "load":
            continue
        seed, own = row.get("seed", 0), split_of(row)
        calibrated_too = seed in runs and own != "fit"
        for profiles, split in ((None, own), *(((runs[seed], f"seed {seed} cal"),) if calibrated_too else ())):
            found = (_train_points(catalog, row, profiles) if row["kind"] == "train"
                     else _model_points(catalog, row, profiles))
            for case, term, predicted, measured in found:
                out.append(RandomPoint(f"s{seed}/{row['model']}", row["config"]["model_type"],
                                       row.get("dtype", row.get("mode", "bf16")), case, term, float(predicted),
                                       float(measured), split))
    return out


def summary(pts: list[RandomPoint]) -> list[tuple[str, str, int, int, float, RandomPoint]]:
    """Per term and split: cases, within target, median |error|, worst point."""
    out = []
    for term, target in TARGETS.items():
        for split in SPLITS:
            group = [p for p in pts if p.term == term and p.split == split]
            if not group:
                continue
            within = sum(abs(p.error) <= target for p in group)
            worst = max(group, key=lambda p: abs(p.error))
            out.append((term, split, len(group), within, statistics.median(abs(p.error) for p in group), worst))
    return out


def bound_summary(pts: list[RandomPoint]) -> list[tuple[str, str, int, int, RandomPoint]]:
    """Per bound term and split: cases, cases whose bound is at most the measurement, the closest (or worst)."""
    out = []
    for term in BOUNDS:
        for split in SPLITS:
            group = [p for p in pts if p.term == term and p.split == split]
            if group:
                closest = max(group, key=lambda p: p.predicted / p.measured)
                out.append((term, split, len(group), sum(p.predicted <= p.measured for p in group), closest))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--split", default="all")
    parser.add_argument("--term", default=None)
    parser.add_argument("--cases", action="store_true", help="print every case")
    parser.add_argument("--calibration", choices=("full", "host"), default="full",
                        help="calibrated seeds: apply every override of the call's calibration, or its host cost only")
    args = parser.parse_args()
    pts = points(load(args.files or sorted(DATA.glob("*.jsonl"))), only_host=args.calibration == "host")
    if args.cases:
        for p in sorted(pts, key=lambda q: (q.term, q.error)):
            if (args.term is None or p.term == args.term) and args.split in ("all", p.split):
                print(f"{p.term:20} {p.split:10} {p.model:14} {p.family:7} {p.dtype:5} {p.case:24} "
                      f"pred {p.predicted:12.5g} meas {p.measured:12.5g} {p.error:+7.1%}")
    for term, split, n, within, median, worst in summary(pts):
        print(f"{term:20} {split:10} cases {n:3} within {within:3} median {median:6.1%} worst {worst.error:+7.1%} "
              f"({worst.model} {worst.dtype} {worst.case})")
    for term, split, n, below, closest in bound_summary(pts):
        share = closest.predicted / closest.measured
        print(f"{term:20} {split:10} cases {n:3} bound <= measured {below:3} closest {share:6.1%} of measured "
              f"({closest.model} {closest.dtype} {closest.case})")


if __name__ == "__main__":
    main()
