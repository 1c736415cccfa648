"""A host-bound phase's assumption: its time at the fastest and the slowest host state the profile states."""

from __future__ import annotations

import pytest

from estimator import default_catalog
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload
from estimator.live.calibration import host_update
from estimator.model.timing import PhaseTime, host_state_range


def _report(profile: str, batch: int, prompt: int, model: str = "llama-3.2-1b",
            override: dict[str, float | None] | None = None) -> object:
    catalog = default_catalog()
    chosen = catalog.profiles.get(profile)
    chosen = chosen.model_copy(update=override) if override else chosen
    fmt = catalog.formats.get("bf16")
    workload = InferenceWorkload(batch=batch, prompt_tokens=prompt, output_tokens=1, weight_format=fmt, kv_format=fmt,
                                 profile=chosen)
    return estimate(catalog.models.get(model), catalog.gpus.get("h200"), workload)


def _host_notes(report: object) -> list[dict[str, object]]:
    return [n.values for n in report.assumptions if n.code.value == "host-bound"]  # type: ignore[attr-defined]


def test_a_host_bound_phase_states_its_span_over_the_host_states() -> None:
    report = _report("hf", 1, 128)
    notes = {v["phase"]: v for v in _host_notes(report)}
    assert set(notes) == {"prefill", "decode step"}
    hf = default_catalog().profiles.get("hf")
    for v in notes.values():
        assert v["ratio"] == hf.host_op_bare_ratio and (v["fast_s"], v["slow_s"]) == hf.host_bare_op_range_s
        # the shipped cost per operation sits between the two states: the phase's time lies inside its span
        assert v["low_s"] < v["seconds"] < v["high_s"]  # type: ignore[operator]
    assert notes["prefill"]["seconds"] == report.time.prefill_s  # type: ignore[attr-defined]


@pytest.mark.parametrize(("model", "operations"), [
    # llama's prefill: 52 counted operations a layer (the profile's eager_ops_per_layer) and 38 outside the layers
    ("llama-3.2-1b", 38 + 16 * 52),
    ("qwen3-0.6b", 41 + 28 * 68),  # qwen3: counted on the CPU (docs/accuracy.md, "Host dispatch")
    ("gpt-oss-20b", 0),  # a family the profile counts no operations for: 24 layers × host_per_layer_s
])
def test_the_note_names_the_figure_the_host_time_comes_from(model: str, operations: int) -> None:
    hf = default_catalog().profiles.get("hf")
    v = next(v for v in _host_notes(_report("hf", 1, 128, model)) if v["phase"] == "prefill")
    assert v["operations"] == operations
    expected = operations * hf.host_per_op_s if operations else v["layers"] * hf.host_per_layer_s  # type: ignore[operator]
    assert v["host_s"] == pytest.approx(expected)


def test_the_span_scales_the_host_time_by_each_state() -> None:
    hf = default_catalog().profiles.get("hf")
    t = PhaseTime(0.0, "memory", 0.010, 0.0, 0.001, 0.0, host_s=0.010)
    low, high = host_state_range(t, hf)  # type: ignore[misc]
    fast, slow = hf.host_bare_op_range_s  # type: ignore[misc]
    assert low == pytest.approx(0.010 * fast * hf.host_op_bare_ratio / hf.host_per_op_s)  # type: ignore[operator]
    assert high == pytest.approx(0.010 * slow * hf.host_op_bare_ratio / hf.host_per_op_s)  # type: ignore[operator]
    # never below the GPU's time: a fast host leaves a GPU-set phase
    t = PhaseTime(0.0, "memory", 0.010, 0.0, 0.0095, 0.0, weights_s=0.0095, host_s=0.010)
    assert host_state_range(t, hf)[0] == pytest.approx(0.0095)  # type: ignore[index]


@pytest.mark.parametrize(("profile", "batch", "prompt", "override"), [
    ("hf", 64, 4096, {}),  # the GPU sets both phases
    ("optimized", 1, 128, {}),  # no host floor
    ("hf", 1, 128, {"host_bare_op_range_s": None}),  # a profile that states no host states
])
def test_no_note_where_the_host_does_not_set_the_time(profile: str, batch: int, prompt: int,
                                                        override: dict[str, float | None]) -> None:
    assert _host_notes(_report(profile, batch, prompt, override=override)) == []


def test_a_calibration_drops_the_states_of_another_host() -> None:
    """A measured cost per operation describes this machine: the shipped host's states no longer apply."""
    hf = default_catalog().profiles.get("hf")
    update = host_update(hf, 2.0e-5)
    assert update["host_bare_op_range_s"] is None and update["host_per_op_s"] == 2.0e-5
    assert _host_notes(_report("hf", 1, 128, override=update)) == []


def test_a_profile_gives_its_host_states_fastest_first() -> None:
    hf = default_catalog().profiles.get("hf")
    data = {**hf.model_dump(), "host_bare_op_range_s": (1.37e-5, 7.3e-6)}
    with pytest.raises(ValueError, match="fastest state first"):
        type(hf).model_validate(data)
