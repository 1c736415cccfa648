"""Write docs/accuracy.md: per term, how close the estimate is to what was measured, over the committed rows.

    python -m lab.accuracy.report [--data tests/data/measured] [--out docs/accuracy.md]
    python -m lab.accuracy.report --cases       # every catalog comparison, one line each, to stdout

Reads every ``*.jsonl`` under ``--data`` (rows of lab/measure/catalog_models.py and ``estimator validate --save``),
the calibration file beside them, the random architectures' rows (``random/``), the probes of single kernels and the
published training runs; each term's table is computed here from those rows. Deterministic: the same files give the
same document.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator.catalog.registry import default_catalog
from estimator.units import format_bytes
from lab.accuracy import host_split, kernels, notes, published_training, state_report, terms
from lab.accuracy.tp_points import compare as compare_tp
from lab.accuracy.training_points import predict as predict_training

ROOT = Path(__file__).resolve().parents[2]


def _training(rows: list[dict[str, Any]], pts: list[Any]) -> list[str]:
    """The catalog's training rows (peak and step time) and the random architectures' steps."""
    train_rows = [r for r in rows if r.get("kind") == "train" and not r.get("error")]
    errors: list[float] = []
    table: list[str] = []
    for r in train_rows:
        report = predict_training(r, "h200")
        peak = report.memory.peak_tensor_bytes
        error = (peak - r["steady_peak"]) / r["steady_peak"]
        step_error = (report.time.step_s - r["latency"]["median_s"]) / r["latency"]["median_s"]
        errors.append(error)
        table.append(f"| {r['model']} | {r['mode']} | {r['batch']} × {r['seq']} | {r['checkpointing']} | "
                     f"{format_bytes(peak, binary=True)} | {format_bytes(r['steady_peak'], binary=True)} | "
                     f"{terms.pct(error)} | {'✓' if abs(error) <= 0.10 else '✗'} | "
                     f"{report.time.step_s * 1e3:,.0f} ms | "
                     f"{r['latency']['median_s'] * 1e3:,.0f} ms | {terms.pct(step_error)} |")
    within = sum(abs(e) <= 0.10 for e in errors)
    return [f"Catalog models (`hf` profile, AdamW): steady-state peak within ±10% in {within} of {len(errors)}; "
            f"worst {terms.pct(max(errors, key=abs))}. Step time has no target here.", "",
            "| model | mode | batch × seq | checkpointing | predicted peak | measured peak | error | | predicted step "
            "| measured step | step error |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |", *table, "",
            "Random architectures (0.05–8.8 B parameters; amp, bf16, fp32; checkpointing on and off):", "",
            *terms.random_table(pts, ("train steady peak", "train step"))]


def _tensor_parallel(data: Path) -> list[str]:
    out = []
    for tp_file in sorted(data.glob("*tp.jsonl")):
        out += [f"`{tp_file.name}`: llama-3.1-8b (TP 1 and 2; the all-reduce latency was fitted on its TP 2 rows) "
                "and llama-3.1-70b (TP 2, held out), `optimized` profile, `estimate --gpus N`.", "",
                "| case | term | predicted | measured | error |", "| --- | --- | ---: | ---: | ---: |"]
        for case, term, predicted, measured in compare_tp(tp_file):
            timed = "decode" in term or "prefill" in term
            shown = ((f"{predicted * 1e3:,.2f} ms", f"{measured * 1e3:,.2f} ms") if timed
                     else (format_bytes(predicted, binary=True), format_bytes(measured, binary=True)))
            label, error = term, terms.pct((predicted - measured) / measured)
            if "bound" in term:
                label, error = term.replace("<= measured", "≤ measured"), "✓" if predicted <= measured else "✗"
            out.append(f"| {case} | {label} | {shown[0]} | {shown[1]} | {error} |")
        out.append("")
    return out


def _random(pts: list[Any]) -> list[str]:
    return [notes.RANDOM, "",
            *terms.random_table(pts, ("prefill activation", "prefill requested", "prefill_s", "decode optimized",
                                      "decode hf-graph", "decode hf", "train steady peak", "train step")),
            "<details><summary>Every split apart (calibrated seeds twice: shipped, then with their call's "
            "calibration), and the bounds</summary>", "", *terms.per_split_tables(pts), "", "</details>", ""]


def document(data: Path) -> list[str]:
    catalog = default_catalog()
    gpu = catalog.gpus.get("h200")
    rows = terms.load_rows(data)
    found = terms.catalog_points(catalog, gpu, data, rows)
    pts = terms.random_points(data / "random")
    phases = list(host_split.phase_points(data / "random"))
    models = sorted({p.model for p in found.shipped})
    return [
        *notes.intro(rows, models, found.calibration_note),
        "## Memory", "", *terms.catalog_tables(found, terms.MEMORY_TERMS),
        "Random architectures:", "", *terms.random_table(pts, ("prefill activation", "prefill requested")),
        notes.MEMORY, "", *state_report.section(data / "state"), "",
        "## Prefill time", "", *terms.catalog_tables(found, terms.PREFILL_TERMS),
        "Random architectures:", "", *terms.random_table(pts, ("prefill_s",)),
        *kernels.split_table(phases, "prefill_s"), kernels.gpu_misses(phases), "", notes.PREFILL, "",
        "## Decode time", "", *terms.catalog_tables(found, terms.DECODE_TERMS),
        "Random architectures:", "", *terms.random_table(pts, ("decode optimized", "decode hf-graph", "decode hf")),
        *kernels.split_table(phases, "decode hf"), notes.DECODE, "",
        "## Host dispatch", "", notes.HOST, "", *kernels.host_section(phases),
        "## Decode attention kernels", "", notes.DECODE_KERNELS, "", *kernels.decode_kernel_section(),
        "## Prefill kernels", "", notes.PREFILL_KERNELS, "", *kernels.prefill_kernel_section(),
        "## Training steps", "", *_training(rows, pts), notes.TRAINING, "",
        "## Tensor parallel", "", notes.TENSOR_PARALLEL, "", *_tensor_parallel(data),
        "## Published training runs", "", *published_training.section(catalog), "",
        "## Random architectures", "", *_random(pts)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "tests" / "data" / "measured")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "accuracy.md")
    parser.add_argument("--cases", action="store_true", help="print every catalog comparison instead")
    args = parser.parse_args()
    if args.cases:
        catalog = default_catalog()
        found = terms.catalog_points(catalog, catalog.gpus.get("h200"), args.data, terms.load_rows(args.data))
        print("\n".join(terms.every_case(found.shipped)))
        return
    text = "\n".join(document(args.data)).rstrip() + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
