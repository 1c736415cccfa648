"""Hugging Face's static-cache decode attention, read from the probe of that call alone.

``tests/data/measured/attention/h200-2026-12-02-hf-decode-attention.jsonl`` (``lab/measure/hf_decode_attention
.py`` on the H200: PyTorch 2.11, transformers 5.17) times transformers' ``sdpa_attention_forward`` as a static-cache
decode calls it — a boolean mask, so ``repeat_kv`` first — and its two parts apart, for 200 shapes in bf16, fp16 and
fp32. This script reads from its rows what the `hf` and `hf-graph` profiles state, and how well the rule holds:

- the kernels: in 16-bit every call runs cuDNN's ``sdpa_sm80_flash_fprop`` (the lean decode's kernel) with
  one KV head per query head, in fp32 PyTorch's memory-efficient ``fmha_cutlassF_f32`` kernels (``kernels``);
- the copy: ``repeat_kv`` copies several KV heads (an elementwise kernel) and views one (stride 0, no kernel); its time
  is the elements it writes at a rate per dtype, the median over the ``fit`` rows (``copy_rates``);
- 16-bit attention: the lean kernel's tiles with a group of one, the copies read whole and a view's further walks at the
  tiles' re-read fraction, at a rate and a fixed time least squares over the ``fit`` rows (``masked_rate``);
- fp32 attention: per kernel variant (chosen by head dim), a fixed time and a time per key position paid once per
  wave of the thread blocks that read distinct memory, least squares over the ``fit`` rows whose heads are copied or
  own; a view's rows are not fitted and judge the rule that its further blocks read from L2 (``fp32_variants``).

The 16-bit rule and the copy read only rows whose repeated cache is at least 32 MB (smaller ones sit in the H200's L2
across the graph's calls); the fp32 walk is bound by its latency per key, not the bytes, so it reads every row. The
graph and eager decode rows in ``tests/data/measured/random`` were not used and judge the rule.

    pip install '.[test]'                           # numpy, for the least squares
    python -m lab.fit.repeat_kv       # the figures and their residuals by split
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from estimator import default_catalog
from estimator.model.decode_attention import repeated, walk

PROBE = (Path(__file__).resolve().parents[2] / "tests" / "data" / "measured" / "attention"
         / "h200-2026-12-02-hf-decode-attention.jsonl")
PEAK_BYTES_PER_S = 4.8e12  # H200 SXM HBM3e (specs/gpus/nvidia-h200-sxm.yaml)
MIN_BYTES = 32e6


def rows_of(path: Path = PROBE) -> list[dict[str, Any]]:
    return [r for r in (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
            if r["kind"] == "hf_attention" and "error" not in r]


def group(row: dict[str, Any]) -> int:
    return int(row["heads"] // row["kv_heads"])


def copied(row: dict[str, Any]) -> bool:
    """repeat_kv wrote copies (several KV heads shared by several query heads)."""
    return group(row) > 1 and not row["repeated_view"]


def read_bytes(row: dict[str, Any]) -> float:
    """What the attention kernel reads from memory at least once: the copies whole, else the cache."""
    return float(row["kv_bytes"] * (group(row) if copied(row) else 1))


def size(row: dict[str, Any]) -> int:
    return 4 if row["dtype"] == "fp32" else 2


def kernels(rows: list[dict[str, Any]]) -> Counter[tuple[str, str]]:
    """(dtype class, attention kernel family) over the rows: the call's last kernel that is not elementwise."""
    out: Counter[tuple[str, str]] = Counter()
    for r in rows:
        names = [k["name"] for k in r["kernels"] if "elementwise" not in k["name"] and "reduction" not in k["name"]]
        family = "cudnn sdpa_sm80_flash_fprop" if "sdpa_sm80_flash_fprop" in names[-1] else names[-1].split("(")[0]
        out["fp32" if r["dtype"] == "fp32" else "16-bit", family] += 1
    return out


def copy_rates(rows: list[dict[str, Any]]) -> dict[str, tuple[float, list[float]]]:
    """Per dtype class: the fit rows' median elements written per second, and the check rows' residuals at it."""
    out = {}
    for name, dtypes in (("16-bit", ("bf16", "fp16")), ("fp32", ("fp32",))):
        chosen = [r for r in rows if r["dtype"] in dtypes and copied(r) and read_bytes(r) >= MIN_BYTES]
        written = {id(r): r["kv_bytes"] * group(r) / size(r) for r in chosen}
        rate = statistics.median(written[id(r)] / r["copy"]["median_s"] for r in chosen if r["split"] == "fit")
        out[name] = (rate, [(written[id(r)] / rate - r["copy"]["median_s"]) / r["copy"]["median_s"]
                            for r in chosen if r["split"] == "check"])
    return out


Design = Callable[[dict[str, Any]], list[float]]


def _fit_sdpa(chosen: list[dict[str, Any]], design: Design) -> tuple[np.ndarray, dict[str, list[float]]]:
    """Least squares of the relative error of the SDPA part's time over the ``fit`` rows of ``chosen``: the
    coefficients, and every row's residual by split."""
    fit = [r for r in chosen if r["split"] == "fit"]
    x, y = np.array([design(r) for r in fit]), np.array([r["sdpa"]["median_s"] for r in fit])
    coef, *_ = np.linalg.lstsq(x / y[:, None], np.ones(len(y)), rcond=None)
    residuals: dict[str, list[float]] = {}
    for r in chosen:
        y_r = r["sdpa"]["median_s"]
        residuals.setdefault(r["split"], []).append((float(np.array(design(r)) @ coef) - y_r) / y_r)
    return coef, residuals


def masked_rate(rows: list[dict[str, Any]]) -> tuple[float, float, dict[str, list[float]]]:
    """16-bit: time = t0 + the tiles' bytes (group of one; copies whole, a view at the re-read fraction) / (peak × η);
    (η, t0, residuals by split)."""
    tiles = default_catalog().profiles.get("optimized").decode_attention
    assert tiles is not None
    chosen = [r for r in rows if r["dtype"] != "fp32" and read_bytes(r) >= MIN_BYTES]

    def design(r: dict[str, Any]) -> list[float]:
        factor = (repeated(group(r), r["kv_heads"], r["head_dim"], tiles).factor if group(r) > 1
                  else walk(1, r["head_dim"], tiles).factor)
        return [1.0, r["kv_bytes"] * factor / PEAK_BYTES_PER_S]

    coef, residuals = _fit_sdpa(chosen, design)
    return float(1 / coef[1]), float(coef[0]), residuals


def fp32_terms(rows: list[dict[str, Any]]) -> tuple[float, float, dict[str, list[float]]]:
    """The two-term fp32 rule the kernel's variants replaced: time = key_s × cache
    positions + pair_s × (sequence, head, position) triples, least squares of the call's SDPA time over rows whose
    heads are copied or own and whose repeated cache is at least 32 MB; (key_s, pair_s, residuals by split)."""
    chosen = [r for r in rows if r["dtype"] == "fp32" and (copied(r) or group(r) == 1) and read_bytes(r) >= MIN_BYTES]

    def design(r: dict[str, Any]) -> list[float]:
        return [float(r["cache_len"]), float(r["batch"] * r["heads"] * r["cache_len"])]

    coef, residuals = _fit_sdpa(chosen, design)
    return float(coef[0]), float(coef[1]), residuals


BLOCKS_PER_SM = (1.0, 1.5, 2.0, 3.0)  # the grid the blocks an SM runs at full speed are chosen from
WIDTHS = {"64x64_rf": 64, "64x128_rf": 128, "32x128_gmem": None}  # fmha_cutlassF_f32 variant -> max_head_dim


def sm_count(path: Path = PROBE) -> int:
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    return int(first["sm_count"])


def _fmha(row: dict[str, Any]) -> dict[str, Any]:
    return dict(next(k for k in row["kernels"] if "fmha_cutlassF_f32" in k["name"]))


def fmha_s(row: dict[str, Any]) -> float:
    """The fp32 call's attention kernel alone: the mask's fill and where kernels are operations the step counts."""
    return float(_fmha(row)["dur_s"])


def variant(row: dict[str, Any]) -> str:
    return next(v for v in WIDTHS if f"_{v}_" in _fmha(row)["name"])


def viewed(row: dict[str, Any]) -> bool:
    """repeat_kv handed one KV head to several query heads as a view."""
    return group(row) > 1 and bool(row["repeated_view"])


def streams(row: dict[str, Any]) -> int:
    """Thread blocks reading distinct memory: one per (sequence, query head), per (sequence, KV head) for a view."""
    return int(row["batch"] * (row["kv_heads"] if viewed(row) else row["heads"]))


def fp32_variants(rows: list[dict[str, Any]]) -> dict[str, tuple[float, float, float, dict[str, list[float]]]]:
    """fp32, per kernel variant: the kernel's time = fixed + key × cache positions × ⌈streams ÷ (SMs × blocks per
    SM)⌉, least squares on the fit rows whose heads are copied or their own, at the blocks per SM of the grid whose fit
    rows' median |error| is least; (fixed_s, key_s, streams per wave, residuals by split, and `view` for every view
    row, none of which was fitted)."""
    sms, out = sm_count(), {}
    for name in WIDTHS:
        chosen = [r for r in rows if r["dtype"] == "fp32" and variant(r) == name]
        fit = [r for r in chosen if r["split"] == "fit" and not viewed(r)]
        y = np.array([fmha_s(r) for r in fit])
        best = None
        for per_sm in BLOCKS_PER_SM:
            wave = sms * per_sm

            def design(r: dict[str, Any], wave: float = wave) -> list[float]:
                return [1.0, r["cache_len"] * -(-streams(r) // wave)]

            x = np.array([design(r) for r in fit])
            coef, *_ = np.linalg.lstsq(x / y[:, None], np.ones(len(y)), rcond=None)
            res: dict[str, list[float]] = {}
            for r in chosen:
                res.setdefault("view" if viewed(r) else r["split"], []).append(
                    float(np.array(design(r)) @ coef) / fmha_s(r) - 1)
            score = statistics.median(abs(e) for e in res["fit"])
            if best is None or score < best[0]:
                best = (score, (float(coef[0]), float(coef[1]), wave, res))
        assert best is not None
        out[name] = best[1]
    return out


def _line(res: list[float]) -> str:
    return (f"{len(res):3} rows  median |error| {statistics.median(abs(x) for x in res):.1%}  within 15% "
            f"{sum(abs(x) <= 0.15 for x in res)}  worst {max(res, key=abs):+.1%}")


def main() -> None:
    rows = rows_of()
    for (dtype, family), count in sorted(kernels(rows).items()):
        print(f"{dtype:6} {family}: {count} rows")
    for name, (rate, res) in copy_rates(rows).items():
        print(f"repeat_kv copy, {name}: {rate:.3g} elements/s (fit median); check {_line(res)}")
    eta, t0, residuals = masked_rate(rows)
    print(f"16-bit masked attention: {eta:.3f} of peak, {t0 * 1e6:.1f} us fixed")
    for split, res in residuals.items():
        print(f"  {split:6} {_line(res)}")
    for name, (fixed_s, key_s, wave, residuals) in fp32_variants(rows).items():
        print(f"fp32 attention, fmha_cutlassF_f32 {name} (max head dim {WIDTHS[name]}): {fixed_s:.3g} s fixed, "
              f"{key_s:.3g} s per key position and wave of {wave:g} streams")
        for split, res in sorted(residuals.items()):
            print(f"  {split:6} {_line(res)}")


if __name__ == "__main__":
    main()
