"""CLI: the acceptance commands, the output formats, and bad input as one line on stderr with a non-zero exit."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

ROOT = Path(__file__).resolve().parents[2]
Cli = Callable[..., CliResult]
PLAN = ["plan", "--model", "llama-3.1-70b", "--dtype", "bf16", "--prompt-tokens", "4096", "--output-tokens", "512",
        "--concurrency", "32"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "estimator", *args], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "COLUMNS": "250", "PATH": ""}, check=False)


def test_plan_table_lists_servers_and_costs() -> None:
    done = run(*PLAN)
    assert done.returncode == 0, done.stderr
    assert "$/Mtok" in done.stdout and "owned $/h" in done.stdout and "rented $/h" in done.stdout
    assert "hgx-h100" in done.stdout
    assert "ranked by $/h for the goal" in done.stdout and "use" in done.stdout


def test_plan_csv_has_a_row_per_system() -> None:
    done = run(*PLAN, "--format", "csv")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    feasible = [r for r in rows if r["feasible"] == "True"]
    assert len(feasible) >= 10
    assert {"system", "servers", "cards", "tensor_parallel", "pipeline_parallel", "replicas", "tokens_per_s",
            "owned_usd_per_hour", "rented_usd_per_hour", "owned_usd_per_million_tokens",
            "rented_usd_per_million_tokens", "usd_per_million_tokens", "price_date", "server_power_w"} <= set(rows[0])


def test_prices_file_changes_figures_and_sentences(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("amortization_years: 5\nelectricity_usd_per_kwh: 0.2\nsystems:\n  hgx-h100:\n"
                      "    usd: 250000\n    date: 2025-09\n    usd_per_hour: 20\n", encoding="utf-8")
    base = json.loads(run(*PLAN, "--systems", "hgx-h100", "--format", "json").stdout)
    done = run(*PLAN, "--systems", "hgx-h100", "--prices", str(prices), "--format", "json")
    assert done.returncode == 0, done.stderr
    option, before = json.loads(done.stdout)["options"][0], base["options"][0]
    # owned: 250,000 / (5 × 8760) + 10,200 W × $0.2/kWh = 5.7078 + 2.04 per server-hour, for the part of the
    # HGX H100 bought (4 of its 8 GPUs hold the 32 sequences: half a server, pro rata)
    share = option["gpus_bought"] / 8
    assert (option["gpus_bought"], option["cards"]) == (4, 4)
    assert option["owned_usd_per_hour"] == pytest.approx(share * (250_000 / (5 * 8760) + 10.2 * 0.2), rel=1e-12)
    assert option["owned_usd_per_hour"] != before["owned_usd_per_hour"]
    assert option["rented_usd_per_hour"] == 20 * share and before["rented_usd_per_hour"] is None
    texts = " ".join(a["text"] for a in json.loads(done.stdout)["assumptions"])
    assert "over 5 years" in texts and "$0.2/kWh" in texts
    assert "over 3 years" not in texts and "0.13" not in texts  # the defaults it replaced are not stated


def test_plan_json_and_xlsx(tmp_path: Path) -> None:
    done = run(*PLAN, "--gpu", "h100,a100,l4", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [o["system"] for o in data["options"]][:1] == ["hgx-h100"] or data["options"][0]["system"]
    assert data["goal"]["concurrency"] == 32
    out = tmp_path / "plan.xlsx"
    assert run(*PLAN, "--gpu", "h100", "--format", "xlsx", "-o", str(out)).returncode == 0
    assert out.stat().st_size > 0


def test_sweep_csv_and_plots(tmp_path: Path) -> None:
    done = run("sweep", "--model", "llama-3.1-8b,llama-3.1-70b", "--gpu", "h100", "--gpus", "4", "--batch", "1,8,64",
               "--prompt-tokens", "1k,8k,32k", "--plot", str(tmp_path / "s.png"))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert len(rows) == 18
    assert "memory.max_batch" in rows[0]
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    svg = tmp_path / "e.svg"
    assert run("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--plot", str(svg)).returncode == 0
    assert b"<svg" in svg.read_bytes()[:500]


def test_a_sweep_point_the_model_cannot_split_is_a_row_and_the_rest_goes_on(tmp_path: Path) -> None:
    """qwen2.5-7b cannot split 28 heads at TP 8: those points are rows with the message, the rest are printed."""
    args = ["sweep", "--model", "qwen2.5-7b,llama-3.1-8b", "--gpu", "h100", "--gpus", "1,8", "--batch", "1,4"]
    done = run(*args, "--plot", str(tmp_path / "s.png"))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    why = "tensor parallel 8 does not divide 28 attention heads"
    assert [(r["model.name"], r["workload.gpus"], r["workload.batch"], r["error"]) for r in rows] == [
        ("qwen2.5-7b", "1", "1", ""), ("qwen2.5-7b", "1", "4", ""), ("qwen2.5-7b", "8", "1", why),
        ("qwen2.5-7b", "8", "4", why), ("llama-3.1-8b", "1", "1", ""), ("llama-3.1-8b", "1", "4", ""),
        ("llama-3.1-8b", "8", "1", ""), ("llama-3.1-8b", "8", "4", "")]
    assert rows[2]["memory.total_bytes"] == rows[2]["time.tokens_per_s"] == rows[2]["memory.fits"] == ""
    assert rows[0]["memory.total_bytes"] != ""
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"  # the chart draws the points that have figures
    listed = json.loads(run(*args, "--format", "json").stdout)
    assert [r["error"] for r in listed] == [r["error"] or None for r in rows]
    assert listed[2]["memory.total_bytes"] is None
    from openpyxl import load_workbook

    book = tmp_path / "s.xlsx"
    assert run(*args, "--format", "xlsx", "-o", str(book)).returncode == 0
    workbook = load_workbook(book, read_only=True)  # read-only keeps the file open until closed
    try:
        table = [[*r, *[None] * 80][:len(rows[0])] for r in workbook["sweep"].iter_rows(values_only=True)]
    finally:
        workbook.close()  # else the open file's ResourceWarning fails whichever later test the collector runs in
    column = next(i for i, h in enumerate(table[0]) if str(h).startswith("error"))
    assert [r[column] for r in table[1:]] == [r["error"] or None for r in rows]


@pytest.mark.parametrize("args", [
    ["--model", "qwen2.5-7b", "--gpus", "8"],  # a single point, invalid
    ["--model", "qwen2.5-7b", "--gpus", "8,16", "--batch", "1,2"],  # a grid with no valid point
])
def test_a_sweep_with_no_point_that_can_run_is_one_error_line(args: list[str]) -> None:
    done = run("sweep", "--gpu", "h100", *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "error: qwen2.5-7b: tensor parallel 8 does not divide 28 attention heads"
        + ("" if len(args) == 4 else " (and no other point of the 4 can run)")]


def test_sweep_grid_over_limit_is_refused_before_building(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep's grid has a limit (10^7 points would take 13.8 GB). Over the limit, one line names the size, the
    limit and --max-points, before a model is read (the unknown one is not reported) or a point evaluated."""
    import estimator.planning.sweep

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the grid was built")

    monkeypatch.setattr(estimator.planning.sweep, "sweep", never)
    axis = ",".join(str(n) for n in range(1, 101))
    # 2 models × 1 card × 100 batches × 100 prompts × 101 outputs = 2,020,000 points, past the 2,000,000 default
    args = ["sweep", "--model", "llama-3.1-8b,no-such-model", "--gpu", "h100", "--batch", axis,
            "--prompt-tokens", axis, "--output-tokens", f"0,{axis}"]
    done = cli(*args)
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "error: the grid has 2,020,000 points, more than the limit of 2,000,000: pass --max-points 2020000 to raise "
        "the limit"]
    lowered = cli("sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "1,2,4", "--max-points", "2")
    assert lowered.exit_code == 2
    assert lowered.stderr.strip().splitlines() == [
        "error: the grid has 3 points, more than the limit of 2: raise --max-points"]
    assert cli("sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--max-points", "0").exit_code == 2


def test_sweep_max_points_raises_the_limit(cli: Cli) -> None:
    from estimator.request.sweep import DEFAULT_MAX_POINTS

    assert DEFAULT_MAX_POINTS == 2_000_000  # lab/speed/sweep_memory.py: ~0.7 KB a point, ~1.5 GB
    done = cli("sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "1,2,4", "--max-points", "3")
    assert done.exit_code == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1 + 3  # header and the three points


@pytest.mark.parametrize(("args", "message"), [
    (["plan", "--model", "llama-3.1-70b"], "give a goal"),
    (["plan", "--model", "llama-3.1-70b", "--concurrency", "0"], "--concurrency must be positive"),
    (["plan", "--model", "llama-3.1-70b", "--concurrency", "4", "--target-tokens-per-s", "9"], "not both"),
    (["plan", "--model", "llama-3.1-70b", "--max-ttft-s", "nan"], "positive finite"),
    (["plan", "--model", "llama-3.1-70b", "--concurrency", "4", "--gpu", "h1000"], "unknown GPU"),
    (["plan", "--model", "llama-3.1-70b", "--concurrency", "4", "--prices", "/nonexistent.yaml"], "cannot read"),
    (["plan", "--model", "llama-3.1-70b", "--concurrency", "4", "--format", "xlsx"], "needs --output"),
    (["plan", "--model", "llama-3.1-70b", "--concurrency", "4", "--systems", "hgx-h1000"], "unknown system"),
    (["plan", "--model", "llama-3.1-70b", "--concurrency", "4", "--headroom", "1.5"], "fraction in [0, 1)"),
    (["plan", "--model", "llama-3.1-70b", "--concurrency", "4", "--step-tokens", "0"], "must be positive"),
    (["sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "1,-2"], "not a count"),
    (["sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "3"], "does not divide"),
    (["sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "2000000"], "batch must lie"),
    # about the flag itself, not a point: still the whole command, even beside valid values
    (["sweep", "--model", "llama-3.1-8b", "--gpu", "h100,h1000"], "unknown GPU"),
    (["sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "1,0"], "--batch"),
    (["sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--kv-dtype", "int4"], "not a KV-cache format"),
    (["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--plot", "x.pdf"], ".png or .svg"),
])
def test_bad_input_is_one_line(args: list[str], message: str) -> None:
    done = run(*args)
    assert done.returncode != 0
    assert done.stdout == ""
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_bad_prices_file(tmp_path: Path) -> None:
    bad = tmp_path / "prices.yaml"
    bad.write_text("gpus:\n  h100: {usd_per_hour: -2}\n", encoding="utf-8")
    done = run(*PLAN, "--prices", str(bad))
    assert done.returncode == 2
    assert "usd_per_hour" in done.stderr
    assert len(done.stderr.splitlines()) == 1
