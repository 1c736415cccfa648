"""The live-GPU commands with a fake probe, and their one-line failures on a machine without a GPU."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from estimator.cli import gpu as cli_gpu
from estimator.errors import DeviceUnavailable, MissingDependency
from estimator.live import measure
from estimator.live.probe import FakeProbe, GpuProcess, LiveGpu, NvmlProbe, Snapshot
from estimator.report import SCHEMA_VERSION
from tests.conftest import CliResult
from tests.fake_nvml import DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND, FakeNvml

Cli = Callable[..., CliResult]


def h200(used: int = 644_939_776, processes: tuple[GpuProcess, ...] = ()) -> LiveGpu:
    total = 150_754_820_096
    return LiveGpu(index=0, name="NVIDIA H200", uuid="GPU-1", memory_total_bytes=total, memory_used_bytes=used,
                   memory_free_bytes=total - used, memory_reserved_bytes=644_939_776, bus_width_bits=6016,
                   max_mem_clock_mhz=3201, mem_clock_mhz=3201, pcie_gen_max=5, pcie_width_max=16,
                   power_limit_w=700.0, utilization_gpu_pct=37, utilization_memory_pct=12, mig_enabled=False,
                   processes=processes)


def snapshot(*gpus: LiveGpu) -> Snapshot:
    return Snapshot(driver_version="580.159.04", cuda_driver_version="13.0", gpus=gpus or (h200(),))


@pytest.fixture(autouse=True)
def _no_user_calibration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def use_probe(monkeypatch: pytest.MonkeyPatch, probe: object) -> None:
    monkeypatch.setattr(cli_gpu, "make_probe", lambda: probe)


def test_gpu_table_shows_acceptance_figures(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    use_probe(monkeypatch, FakeProbe([snapshot()]))
    result = cli("gpu")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "143,771 MiB" in out
    assert "6,016 bit" in out
    assert "3,201 MHz" in out
    assert "6016 bit / 8 × 3,201 MHz × 2 = 4.814 TB/s" in out
    assert "catalog match: NVIDIA H200 SXM 141GB" in out
    assert "-2.1%" in out  # bus width: 6016 live vs 6144 spec


def test_gpu_json(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    other = h200().model_copy(update={"index": 1, "name": "NVIDIA Quadro P400", "memory_total_bytes": 2 * 2**30})
    use_probe(monkeypatch, FakeProbe([snapshot(h200(), other)]))
    result = cli("gpu", "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    first, second = data["gpus"]
    assert data["driver_version"] == "580.159.04"
    assert first["memory_total_bytes"] == 150_754_820_096
    assert first["implied_bandwidth_bytes_per_s"] == 4_814_304_000_000
    assert first["catalog_match"] == "NVIDIA H200 SXM 141GB"
    assert {c["quantity"] for c in first["comparison"]} >= {"memory total", "memory bandwidth"}
    assert second["catalog_match"] is None
    assert second["comparison"] == []


def test_gpu_table_without_match_and_missing_fields(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    odd = h200().model_copy(update={"name": "NVIDIA Quadro P400", "bus_width_bits": None,
                                    "unavailable": ("memory bus width: Not Supported",),
                                    "processes": (GpuProcess(pid=7, name="python3", used_bytes=2**30),)})
    use_probe(monkeypatch, FakeProbe([snapshot(odd)]))
    result = cli("gpu")
    assert result.exit_code == 0
    assert "catalog: no match" in result.stdout
    assert "not available" in result.stdout
    assert "7 python3: 1,024 MiB" in result.stdout


def test_monitor_plain_lines_when_piped(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = FakeProbe([snapshot(h200(used=10 * 2**30)), snapshot(h200(used=11 * 2**30))])
    use_probe(monkeypatch, probe)
    result = cli("monitor", "--count", "2", "--interval", "0.05")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert "gpu0 used 10,240 MiB of 143,771 MiB util 37% memclk 3,201 MHz" in lines[0]
    assert "11,264 MiB" in lines[1]
    assert probe.closed


def test_monitor_expect_shows_gap(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    use_probe(monkeypatch, FakeProbe([snapshot(h200(used=18 * 2**30,
                                                    processes=(GpuProcess(pid=1, name="vllm", used_bytes=None),)))]))
    result = cli("monitor", "--count", "1", "--expect", "--model llama-3.1-8b --batch 1")
    assert result.exit_code == 0, result.stderr
    assert "expected" in result.stdout
    assert "gap" in result.stdout
    assert "pid 1 vllm —" in result.stdout


def test_monitor_expect_bad_options_is_one_line(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    use_probe(monkeypatch, FakeProbe([snapshot()]))
    result = cli("monitor", "--count", "1", "--expect", "--model no-such-model")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: unknown model 'no-such-model'")
    assert result.stdout == ""


def test_monitor_ctrl_c_ends_cleanly(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    class Interrupting(FakeProbe):
        def read(self) -> Snapshot:
            if self.reads == 2:
                raise KeyboardInterrupt
            return super().read()

    probe = Interrupting([snapshot()])
    use_probe(monkeypatch, probe)
    result = cli("monitor", "--interval", "0.05")
    assert result.exit_code == 0
    assert "stopped after 2 readings" in result.stderr
    assert probe.closed


def test_monitor_rich_live_in_a_terminal(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    use_probe(monkeypatch, FakeProbe([snapshot()]))
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setattr("rich.console.Console.is_terminal", property(lambda self: True))
    result = cli("monitor", "--count", "2", "--interval", "0.05", "--expect", "--model llama-3.2-1b")
    assert result.exit_code == 0, result.stderr
    assert "estimator monitor" in result.stdout


@pytest.mark.parametrize("command", [["gpu"], ["monitor", "--count", "1"], ["gpu", "--format", "json"]])
@pytest.mark.parametrize("error", [DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND])
def test_nvml_failures_are_one_line(cli: Cli, monkeypatch: pytest.MonkeyPatch, command: list[str],
                                    error: str) -> None:
    monkeypatch.setattr(cli_gpu, "make_probe", lambda: NvmlProbe(FakeNvml(init_error=error)))
    result = cli(*command)
    assert result.exit_code == 3
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("error: cannot read the GPU through NVML")


def _no_gpu_here() -> bool:
    try:
        NvmlProbe().close()
    except DeviceUnavailable:
        return True
    return False


@pytest.mark.skipif(not _no_gpu_here(), reason="this machine has an NVIDIA driver")
@pytest.mark.parametrize("command", [["gpu"], ["monitor", "--count", "1"], ["calibrate"],
                                     ["validate", "--model", "llama-3.1-8b"]])
def test_each_command_fails_in_one_line_without_a_gpu(cli: Cli, command: list[str]) -> None:
    result = cli(*command)
    assert result.exit_code == 3
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert any(s in lines[0] for s in ("pip install 'llm-estimator[gpu]'", "sees no CUDA GPU", "through NVML"))


def test_missing_torch_names_the_extra(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise MissingDependency("this command needs PyTorch and transformers: pip install 'llm-estimator[gpu]'")

    monkeypatch.setattr(measure, "require_torch", missing)
    for command in (["calibrate"], ["validate", "--model", "llama-3.2-1b"]):
        result = cli(*command)
        assert result.exit_code == 3
        assert result.stderr == ("error: this command needs PyTorch and transformers: "
                                 "pip install 'llm-estimator[gpu]'\n")


def test_validate_rejects_unknown_model_before_touching_the_gpu(cli: Cli) -> None:
    result = cli("validate", "--model", "llama-9")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: unknown model 'llama-9'")


def test_validate_without_cuda_is_device_unavailable(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measure, "require_torch", lambda: None)

    def no_cuda() -> None:
        raise DeviceUnavailable("PyTorch 2.13.0+cpu sees no CUDA GPU (torch.cuda.is_available() is False)")

    monkeypatch.setattr(measure, "require_cuda", no_cuda)
    result = cli("validate", "--model", "llama-3.2-1b")
    assert result.exit_code == 3
    assert "sees no CUDA GPU" in result.stderr


MEASURED = Path(__file__).resolve().parent.parent / "data" / "measured"


def recorded_validate(monkeypatch: pytest.MonkeyPatch, model: str = "llama-3.2-1b") -> list[dict[str, object]]:
    """`validate` without torch: the H200 rows recorded on 2026-11-30 stand in for a fresh measurement."""
    rows = [json.loads(line) for line in (MEASURED / "h200-2026-11-30.jsonl").read_text().splitlines()]
    mine = [r for r in rows if r.get("model") == model]
    for check in ("require_torch", "require_cuda", "require_transformers"):
        monkeypatch.setattr(measure, check, lambda: None)
    monkeypatch.setattr(measure, "inference_rows", lambda *args, **kwargs: mine)
    use_probe(monkeypatch, FakeProbe([snapshot()]))
    return mine


def test_validate_json_is_the_validate_report(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = recorded_validate(monkeypatch)
    result = cli("validate", "--model", "llama-3.2-1b", "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert list(data) == ["schema_version", "model", "gpu", "rows", "points"]
    assert data["schema_version"] == SCHEMA_VERSION == "2.0"
    assert (data["model"], data["gpu"]) == ("llama-3.2-1b", "NVIDIA H200 SXM 141GB")
    assert data["rows"] == rows
    weights = next(p for p in data["points"] if p["term"] == "weights_bytes")
    assert set(weights) == {"model", "case", "term", "predicted", "measured", "error", "target", "ok", "kind"}
    assert weights["target"] == 0.005 and weights["ok"] is True


def test_gpu_json_reproduces_the_recorded_h200_output(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = json.loads((MEASURED / "h200-2026-11-30-gpu.json").read_text())
    live = recorded["gpus"][0]
    gpu = LiveGpu.model_validate({k: v for k, v in live.items() if k in LiveGpu.model_fields})
    use_probe(monkeypatch, FakeProbe([Snapshot(driver_version=recorded["driver_version"],
                                               cuda_driver_version=recorded["cuda_driver_version"], gpus=(gpu,))]))
    result = cli("gpu", "--format", "json")
    assert result.exit_code == 0, result.stderr
    # Recorded at schema 1.0; 2.0 changed only notes, which this report has none of.
    assert json.loads(result.stdout) == {**recorded, "schema_version": SCHEMA_VERSION}


@pytest.mark.parametrize("command", [["gpu", "--format", "csv"], ["validate", "--model", "llama-3.2-1b", "-f", "xlsx"]])
def test_live_commands_refuse_formats_they_do_not_write(cli: Cli, command: list[str]) -> None:
    result = cli(*command)
    assert result.exit_code == 2
    chosen = command[-1]
    assert result.stderr == f"error: --format {chosen} is not available for this command; use table, json\n"


def test_validate_takes_8k_and_a_config_json(cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`validate` takes more than catalog names and plain integers: `8k` parses as estimate parses it
    (8 × 1000 = 8,000; 8Ki is 8,192) and a config.json is built and predicted as `estimate --model path` reads it."""
    from estimator.catalog.files import read_yaml

    rows = recorded_validate(monkeypatch)
    config = read_yaml(Path(__file__).resolve().parents[2] / "specs" / "models" / "llama-3.2-1b.yaml")["config"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    seen: list[tuple[str, dict[str, object], object]] = []

    def fake_rows(name: str, cfg: dict[str, object], **kwargs: object) -> list[dict[str, object]]:
        seen.append((name, cfg, kwargs["prefill"]))
        return [{**r, "model": name} for r in rows]

    monkeypatch.setattr(measure, "inference_rows", fake_rows)
    result = cli("validate", "--model", str(tmp_path / "config.json"), "--prompt-tokens", "8k", "-f", "json")
    assert result.exit_code == 0, result.stderr
    (name, cfg, prefill), = seen
    assert cfg == config
    assert prefill == [(1, 8000)]
    data = json.loads(result.stdout)
    assert data["model"] == name and data["points"]
    bad = cli("validate", "--model", "llama-3.2-1b", "--prompt-tokens", "lots")
    assert bad.exit_code != 0 and len(bad.stderr.strip().splitlines()) == 1
