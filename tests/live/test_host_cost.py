"""The host cost per operation `estimator calibrate` measures (estimator.live.host_cost), on the CPU dry run."""

from __future__ import annotations

import pytest


@pytest.mark.hf
@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning", "ignore::UserWarning")
def test_host_cost_code_paths_on_cpu() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from estimator.live import device, host_cost

    device.dry_run_on_cpu()
    try:
        bare = host_cost.bare_op_s(ops=50, repeats=3)
        got = host_cost.transformers_op_s(repeats=3)
    finally:
        device._STATE["device"] = "cuda"  # leave the module as other tests expect it
    assert bare is not None and bare > 0
    # a Llama layer dispatches 52-63 aten operations under transformers 5.17 (specs/profiles/hf.yaml); other
    # versions move a few, none to fewer than 40 or more than 80
    assert 40 <= got["prefill_ops_per_layer"] <= 80
    assert 40 <= got["decode_ops_per_layer"] <= 80
    assert got["host_per_op_s"] == pytest.approx((got["prefill_op_s"] + got["decode_op_s"]) / 2)
    assert got["host_per_op_s"] > 0


def test_count_ops_counts_each_dispatched_operation() -> None:
    torch = pytest.importorskip("torch")
    from estimator.live.host_cost import count_ops

    x = torch.zeros(4)
    # add_, mul_, and the sum: three aten operations
    assert count_ops(lambda: x.add_(1).mul_(2).sum()) == 3
