"""Fit the `hf` profile's host cost of one training operation per phase.

Seed 2's ``kind=train_parts`` rows (tests/data/measured/random/h200-2026-12-01-seed2-host.jsonl: 30 small random
models, each trained without and with activation checkpointing, every row `fit`) time a step's forward, backward and
optimizer step apart, each with the host's issue time. Each phase's operations are the profile's count
(`estimator.training.host_ops.step_ops`, from lab/measure/count_train_ops.py); the cost of one operation is the
median over the rows of issue time ÷ operations, phase by phase. The rows' own CUDA count of the forward
(``forward_ops``) is printed beside the profile's.

    python -m lab.fit.train_host_per_op_s
"""

from __future__ import annotations

import statistics
from typing import Any

from estimator import default_catalog
from estimator.catalog.profiles import EfficiencyProfile
from estimator.training.host_ops import step_ops
from estimator.training.workload import TrainingWorkload
from lab.accuracy.random_points import _PRECISION, DATA, load, model_of

ROWS = DATA / "h200-2026-12-01-seed2-host.jsonl"
PHASES = ("forward", "backward", "checkpointed forward", "checkpointed backward")


def workload(row: dict[str, Any], profile: EfficiencyProfile) -> TrainingWorkload:
    return TrainingWorkload(batch=row["batch"], seq_len=row["seq"], precision=_PRECISION[row["mode"]],  # type: ignore[arg-type]
                            optimizer="adamw", recompute="full" if row["checkpointing"] else "none",
                            attention="sdpa", profile=profile)


def counted(rows: list[dict[str, Any]], profile: EfficiencyProfile) -> list[tuple[dict[str, Any], int, int]]:
    """(row, forward operations, backward operations) by the profile's count."""
    out = []
    for row in rows:
        arch = model_of(row).arch
        assert arch is not None
        ops = step_ops(arch, workload(row, profile), arch.num_layers)
        assert ops is not None, row["model"]
        out.append((row, *ops))
    return out


def per_op_costs(profile: EfficiencyProfile) -> dict[str, float]:
    """Each phase's median issue time per operation over seed 2's rows."""
    rows = [r for r in load([ROWS]) if r.get("kind") == "train_parts" and not r.get("error")]
    costs: dict[str, list[float]] = {phase: [] for phase in PHASES}
    for row, forward, backward in counted(rows, profile):
        prefix = "checkpointed " if row["checkpointing"] else ""
        costs[prefix + "forward"].append(row["forward_host_s"] / forward)
        costs[prefix + "backward"].append(row["backward_host_s"] / backward)
    return {phase: statistics.median(values) for phase, values in costs.items()}


def main() -> None:
    profile = default_catalog().profiles.get("hf")
    rows = [r for r in load([ROWS]) if r.get("kind") == "train_parts" and not r.get("error")]
    gaps = [row["forward_ops"] - forward for row, forward, _ in counted(rows, profile)]
    print(f"{len(rows)} rows; the rows' CUDA forward count less the profile's: {min(gaps)} .. {max(gaps)} operations")
    for phase, cost in per_op_costs(profile).items():
        print(f"{phase:22} {cost * 1e6:6.2f} us per operation (median)")


if __name__ == "__main__":
    main()
