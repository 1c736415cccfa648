"""Measure catalog models on the live GPU in one run and stream the rows as JSON lines.

    python -m lab.measure.catalog_models --out DIR [--budget-s 420] [--only MODEL ...]
    python -m lab.measure.catalog_models --out /tmp/x --tiny      # the same code paths on the CPU, tiny configs

The models and shapes are lab/measure/cases/catalog.yaml. Rows follow
tests/data/measured/reference/h200-measured.jsonl: ``kind=device`` first (NVML before CUDA starts,
so run this in a fresh process), then per model ``kind=model`` (load, prefill with logits last/all, HF eager decode),
``kind=lean_decode`` (CUDA-graph decode, dense models) and ``kind=train`` (AdamW steps, amp and bf16,
checkpointing on and off).
Each case is guarded; a failure is a row with ``error``. No new case starts once ``--budget-s`` has passed.
Weights are random, built directly on the GPU in bf16 from the catalog config (no download).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator.catalog.files import read_yaml
from estimator.catalog.registry import default_catalog
from estimator.live import measure

CASES = Path(__file__).resolve().parent / "cases" / "catalog.yaml"
Shape = tuple[int, int]
TrainCase = tuple[str, str, int, int, bool]


def _shapes(found: list[list[int]]) -> list[Shape]:
    return [(int(batch), int(tokens)) for batch, tokens in found]


def load_cases(path: Path = CASES) -> dict[str, Any]:
    """The case file: shapes, per-model shapes and the model sets, as tuples."""
    data = read_yaml(path)
    sets = {name: {"inference": list(found.get("inference", [])),
                   "late_inference": list(found.get("late_inference", [])),
                   "lean_models": list(found.get("lean_models", [])),
                   "train": [(str(m), str(mode), int(b), int(q), bool(c))
                             for m, mode, b, q, c in found.get("train", [])]}
            for name, found in data["sets"].items()}
    short = {name: (_shapes(v["prefill"]), _shapes(v["decode"])) for name, v in data.get("short", {}).items()}
    return {"prefill": _shapes(data["shapes"]["prefill"]), "decode": _shapes(data["shapes"]["decode"]),
            "lean": _shapes(data["shapes"]["lean"]), "short": short, "sets": sets}


_CASES = load_cases()
PREFILL, DECODE, LEAN = _CASES["prefill"], _CASES["decode"], _CASES["lean"]
SHORT: dict[str, tuple[list[Shape], list[Shape]]] = _CASES["short"]


def catalog_config(name: str) -> dict[str, Any]:
    catalog = default_catalog()
    for path in sorted((catalog.root / "models").glob("*.yaml")):
        data = read_yaml(path)
        if data.get("name", path.stem) == name:
            return dict(data["config"])
    raise SystemExit(f"no catalog config for {name}")


def tiny(config: dict[str, Any]) -> dict[str, Any]:
    """The same family at toy size, for a CPU dry run."""
    small = dict(config)
    heads = 4
    kv = 2 if (config.get("num_key_value_heads") or 0) < (config.get("num_attention_heads") or 0) else 4
    small.update(hidden_size=64, num_hidden_layers=2, num_attention_heads=heads, intermediate_size=128,
                 vocab_size=512, head_dim=16)
    for key, value in (("num_key_value_heads", kv), ("num_local_experts", 8), ("num_experts", 8),
                       ("moe_intermediate_size", 32), ("sliding_window", 16), ("n_embd", 64), ("n_layer", 2),
                       ("n_head", 4), ("n_inner", 128), ("n_positions", 256)):
        if key in small and small[key] is not None:
            small[key] = value
    if "layer_types" in small:
        small["layer_types"] = small["layer_types"][:2]
    if "max_window_layers" in small:
        small["max_window_layers"] = 2
    return small


class _Run:
    """One measuring run: where rows go, the time budget, and the toy-size switch."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.start = time.monotonic()
        args.out.mkdir(parents=True, exist_ok=True)
        self.sink = (args.out / "measured.jsonl").open("a", encoding="utf-8")

    def emit(self, row: dict[str, Any]) -> None:
        row = {**row, "elapsed_s": round(time.monotonic() - self.start, 1)}
        self.sink.write(json.dumps(row) + "\n")
        self.sink.flush()
        what = row.get("phase") or row["kind"]
        print(f"[{row['elapsed_s']:6.1f}s] {row.get('model', '')} {what} "
              f"{'ERROR ' + row['error'] if row.get('error') else 'ok'}", flush=True)

    def in_budget(self, what: str) -> bool:
        if time.monotonic() - self.start < self.args.budget_s:
            return True
        self.emit({"kind": "skipped", "model": what, "error": f"budget {self.args.budget_s:.0f} s spent"})
        return False

    def wanted(self, name: str) -> bool:
        return self.args.only is None or name in self.args.only

    def config_of(self, name: str) -> dict[str, Any]:
        return tiny(catalog_config(name)) if self.args.tiny else catalog_config(name)

    def infer(self, name: str, prefill: list[tuple[int, int]] = PREFILL, decode: list[tuple[int, int]] = DECODE,
              lean: list[tuple[int, int]] = LEAN, load: bool = True) -> None:
        small = self.args.tiny
        measure.inference_rows(name, self.config_of(name), prefill=[(1, 32)] if small and prefill else prefill,
                               decode=[(2, 24)] if small and decode else decode,
                               lean=[(2, 24)] if small and lean else lean, emit=self.emit, load=load)

    def train(self, name: str, mode: str, batch: int, seq: int, ckpt: bool) -> None:
        try:
            row = measure.measure_train(self.config_of(name), mode=mode, batch=batch,
                                        seq=seq if not self.args.tiny else 32, checkpointing=ckpt)
            self.emit({**row, "model": name})
        except Exception as error:
            self.emit({"kind": "train", "model": name, "mode": mode, "batch": batch, "seq": seq,
                       "checkpointing": ckpt, "error": f"{type(error).__name__}: {error}"[:300]})
            measure.free_memory()


def _extra_set(run: _Run) -> None:
    cases = _CASES["sets"]["extra"]
    for name in cases["inference"]:
        if run.in_budget(name):
            run.infer(name)
    for name, mode, batch, seq, ckpt in cases["train"]:
        if run.in_budget(name):
            run.train(name, mode, batch, seq, ckpt)


def _main_set(run: _Run) -> None:
    lean_only, cases = run.args.lean_only, _CASES["sets"]["main"]
    if lean_only:
        for name in cases["lean_models"]:
            if run.in_budget(name):
                run.infer(name, prefill=[], decode=[], load=False)
    for name in cases["inference"]:
        if run.wanted(name) and run.in_budget(name):
            run.infer(name)
    for name, mode, batch, seq, ckpt in cases["train"]:
        if run.wanted(name) and not lean_only and run.in_budget(name):
            run.train(name, mode, batch, seq, ckpt)
    for name in cases["late_inference"]:
        if run.wanted(name) and run.in_budget(name):
            prefill, decode = SHORT.get(name, (PREFILL, DECODE))
            run.infer(name, prefill=prefill, decode=decode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-s", type=float, default=420.0)
    parser.add_argument("--only", nargs="*", default=None, help="limit to these models")
    parser.add_argument("--tiny", action="store_true", help="CPU dry run with toy configs")
    parser.add_argument("--lean-only", action="store_true", help="only the lean decodes (and --only's HF cases)")
    parser.add_argument("--set", choices=["main", "extra"], default="main",
                        help="which set of lab/measure/cases/catalog.yaml")
    args = parser.parse_args()
    run = _Run(args)
    if args.tiny:
        measure.dry_run_on_cpu()
    else:
        run.emit(measure.device_facts())
    if args.set == "extra":
        _extra_set(run)
        run.sink.close()
        return
    _main_set(run)
    run.sink.close()
    print(f"done in {time.monotonic() - run.start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
