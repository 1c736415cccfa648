"""The assumption a host-bound phase carries: its time at the profile's cost per operation, and the span the host's
state moves it over on the host the profile was measured on (`estimator.model.timing.host_state_range`)."""

from __future__ import annotations

from estimator.catalog.profiles import EfficiencyProfile
from estimator.model.timing import PhaseCost, PhaseTime, counts_host_ops, host_state_range
from estimator.notes import Note, NoteCode, note


def host_state_notes(profile: EfficiencyProfile, prefill_cost: PhaseCost, prefill: PhaseTime,
                     decode_cost: PhaseCost, decode: PhaseTime | None) -> list[Note]:
    """One note per phase whose host dispatch sets its time under ``profile`` (the prefill, and the decode step
    where there is one); none where the GPU does or the profile states no host states."""
    states, ratio = profile.host_bare_op_range_s, profile.host_op_bare_ratio
    if states is None or ratio is None:
        return []
    out = []
    for name, cost, t in (("prefill", prefill_cost, prefill), ("decode step", decode_cost, decode)):
        span = None if t is None else host_state_range(t, profile)
        if t is not None and span is not None:
            counted = cost.host_ops if counts_host_ops(cost, profile) else 0
            out.append(note(NoteCode.HOST_BOUND, phase=name, profile=profile.name, seconds=float(t.expected_s),
                            host_s=float(t.host_s), operations=float(counted), per_op_s=profile.host_per_op_s,
                            layers=int(cost.layers), per_layer_s=profile.host_per_layer_s, ratio=ratio,
                            fast_s=states[0], slow_s=states[1], low_s=span[0], high_s=span[1]))
    return out
