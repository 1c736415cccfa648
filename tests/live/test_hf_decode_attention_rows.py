"""The `hf` profiles' decode attention (repeat_kv, docs/accuracy.md, *Decode attention kernels*) against the probe it
was read from (lab/fit/repeat_kv.py on tests/data/measured/attention)."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from estimator import default_catalog
from tests.lab_modules import lab_module


@pytest.fixture(scope="module")
def probe() -> Any:
    return lab_module("fit.repeat_kv")


def _sig(x: float) -> float:
    return float(f"{x:.3g}")


def test_the_shipped_figures_are_the_probe_s(probe: Any) -> None:
    """Exact at the profiles' three significant figures: the copy's rate per dtype (the fit rows' median) and the fp32
    kernel's variants (least squares on the fit rows); the 16-bit kernel is the lean decode's, so its tiles
    are."""
    rows = probe.rows_of()
    assert len(rows) == 200
    kernels = probe.kernels(rows)
    assert {family for (dtype, family) in kernels if dtype == "16-bit"} == {"cudnn sdpa_sm80_flash_fprop"}
    assert all(family.startswith("fmha_cutlassF_f32") for (dtype, family) in kernels if dtype == "fp32")
    rates = probe.copy_rates(rows)
    variants = probe.fp32_variants(rows)
    walks = tuple((probe.WIDTHS[name], _sig(fixed_s), _sig(key_s), wave)
                  for name, (fixed_s, key_s, wave, _) in variants.items())
    catalog = default_catalog()
    for name in ("hf", "hf-graph"):
        profile = catalog.profiles.get(name)
        assert profile.repeat_kv_elements_per_s == (_sig(rates["16-bit"][0]), _sig(rates["fp32"][0]))
        assert tuple((k.max_head_dim, k.fixed_s, k.key_s, k.streams_per_wave)
                     for k in profile.fp32_cache_attention) == walks
        assert profile.decode_attention == catalog.profiles.get("optimized").decode_attention


def test_the_rule_holds_on_the_probe_check_rows(probe: Any) -> None:
    """Rows not fitted: the copy's time within 10% in median per dtype, and the 16-bit calls' fitted rate within 5% of
    the bandwidth the profiles read the copies at (so no rate of the masked kernel's own is needed)."""
    rows = probe.rows_of()
    for _, residuals in probe.copy_rates(rows).values():
        assert statistics.median(abs(x) for x in residuals) < 0.10
    eta, _, residuals = probe.masked_rate(rows)
    bandwidth = default_catalog().profiles.get("hf-graph").bandwidth_efficiency
    assert abs(eta - bandwidth) / bandwidth < 0.05
    assert statistics.median(abs(x) for x in residuals["check"]) < 0.10

