"""An fp32 decode's attention over its cache by the kernel's waves, and its GEMMs by shape from two rows
(docs/accuracy.md, *Decode attention kernels*). The parts are judged against the kernels' own busy time that seeds 5
and 6 recorded beside each eager decode (``issue``: ``gemm_kernel_s``, ``attention_kernel_s``), the whole steps
against the graph and eager decodes of every seed; none of them was used to set a figure (the attention's come from
the probe of that call alone, lab/fit/repeat_kv.py, the GEMMs' from the prefill GEMMs, lab/fit/gemm.py). Beside
each part, the simpler rule it replaces: one time per key position and per (sequence, head) pair for the attention
(``KEY_TWO_TERM_S``, ``PAIR_TWO_TERM_S``), the weights' read at the bandwidth for the GEMMs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from estimator import default_catalog
from estimator.catalog.profiles import EfficiencyProfile
from estimator.model.decode_attention import view_walks, walk_streams
from estimator.model.gemms import gemms_s, prefill_gemms
from estimator.model.timing import PhaseCost, cache_attention_s
from lab.accuracy import random_points as rp

KEY_TWO_TERM_S, PAIR_TWO_TERM_S = 9.18e-8, 7.46e-10
KERNEL_SEEDS = ("h200-2026-12-01-seed5.jsonl", "h200-2026-12-01-seed6.jsonl")
NARROW = rp.DATA.parent / "h100-2026-12-06-narrow-gemm.jsonl"  # measure_small_gemm.py --narrow, an H100


@dataclass(frozen=True)
class KernelParts:
    """One fp32 eager decode of seeds 5 and 6: its attention and GEMM kernels' busy time beside both rules'."""

    name: str
    batch: int
    attention_s: float
    attention_before_s: float
    attention_after_s: float
    gemm_s: float
    gemm_before_s: float  # the GEMMs' weights at the bandwidth (a GEMV's rule, which every row count had)
    gemm_after_s: float  # by shape at fp32_gemm from two rows; the GEMV's rule at one


def _parts(row: dict[str, Any], profile: EfficiencyProfile, bandwidth: float, fp32_peak: float) -> KernelParts:
    arch = rp.model_of(row).arch
    assert arch is not None and profile.fp32_gemm is not None and profile.decode_attention is not None
    att, layers, batch, context = arch.attention, arch.num_layers, row["batch"], row["context"]
    group = att.num_heads // att.num_kv_heads
    share = view_walks(group, profile.decode_attention) / group if att.num_kv_heads == 1 < group else 1.0
    before = layers * context * (KEY_TWO_TERM_S + PAIR_TWO_TERM_S * batch * att.num_heads * share)
    walk = PhaseCost(0, 0, 0, 0, 0, layers, fp32=True, cache_keys=layers * context,
                     cache_streams=walk_streams(arch, 1, batch, True), cache_head_dim=att.head_dim)
    gemms = prefill_gemms(arch, batch, 1, logits_positions=1, tp=1) or ()
    weights_s = sum(g.k * g.n * g.count for g in gemms) * 4 / (bandwidth * profile.bandwidth_efficiency)
    shaped = gemms_s(gemms, profile.fp32_gemm, fp32_peak, bandwidth, 4) if batch > 1 else weights_s
    issue = row["issue"]
    return KernelParts(f"s{row['seed']}/{row['model']} b{batch} ctx{context}", batch, issue["attention_kernel_s"],
                       before, cache_attention_s(walk, profile), issue["gemm_kernel_s"], weights_s, shaped)


def kernel_parts(data: Path = rp.DATA) -> list[KernelParts]:
    """Every fp32 decode of seeds 5 and 6 with its kernels' busy time (all held out but seed 5's rand-i17)."""
    catalog = default_catalog()
    profile, h200 = catalog.profiles.get("hf-graph"), catalog.gpus.get("h200")
    fp32_peak = h200.peak_flop_per_s("fp32")
    assert fp32_peak is not None
    rows = rp.load([data / name for name in KERNEL_SEEDS])
    return [_parts(r, profile, h200.bandwidth_bytes_per_s, fp32_peak) for r in rows
            if r["kind"] == "model" and r.get("phase") == "decode" and r["dtype"] == "fp32"
            and "attention_kernel_s" in r.get("issue", {})]


def fp32_steps(data: Path = rp.DATA) -> dict[tuple[str, str], list[rp.RandomPoint]]:
    """Every fp32 graph and eager decode step of the random rows under the shipped profiles, by (term, split)."""
    rows = [r for r in rp.load(sorted(data.glob("*.jsonl"))) if r["kind"] == "model" and r.get("phase") == "decode"
            and r["dtype"] == "fp32"]
    out: dict[tuple[str, str], list[rp.RandomPoint]] = {}
    for p in rp.points(rows, data=data):
        if p.term in ("decode hf", "decode hf-graph"):
            out.setdefault((p.term, p.split), []).append(p)
    return out


def one_row_bias(steps: dict[tuple[str, str], list[rp.RandomPoint]]) -> tuple[int, float]:
    """(cases, signed median error) of the fp32 graph steps at batch 1 over every split but the calibrated ones."""
    errors = [p.error for (term, split), group in steps.items() if term == "decode hf-graph" and "cal" not in split
              for p in group if p.case.startswith("b1 ")]
    return len(errors), statistics.median(errors)


