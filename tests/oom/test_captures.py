"""For every OOM captured on the H200 (tests/data/oom), `estimator oom` names the tensor the failed
request was and the term it belongs to, and ranks first the change that then ran without OOM there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.cli.oom import oom_report

DATA = Path(__file__).resolve().parent.parent / "data" / "oom"
# scenario → (the tensor, its term, the top change's label). Sizes: batch 1,024 × 2,048 × 8,192 × 2 B = 32 GiB;
# 256 × 2,048 × 128,256 × 2 B = 125.25 GiB; 2 × 4,096 × 128,256 × 4 B = 4,202,692,608 B; 4,096² × 4 B = 64 MiB;
# 64 × 4,096 × 2,048 × 4 B = 2 GiB.
EXPECTED = {
    "batch": ("MLP intermediate", "activation (layer stage)", "--batch 512 (2 passes)"),
    "logits": ("logits", "activation (logits stage)", "--logits last"),
    "eager-attention": ("logits in fp32 (loss upcast / log_softmax)", "output layer and loss", "--attention sdpa"),
    "optimizer-step": ("optimizer-step temporary of layers.*.self_attn.q_proj.weight", "optimizer step",
                       "--optimizer adamw-fused"),
    "fragmentation": ("hidden states in fp32 (norm upcast)", "activation (layer stage)",
                      "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before the job starts"),
}


def _inputs(name: str, *suffixes: str) -> list[tuple[str, bytes]]:
    return [(f"{name}{s}", (DATA / f"{name}{s}").read_bytes()) for s in suffixes]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_capture_names_the_tensor_and_ranks_the_change_that_ran(name: str) -> None:
    meta = json.loads((DATA / f"{name}.json").read_text())
    assert meta["run"]["oom"] is True and meta["fix_run"]["oom"] is False  # measured on the H200
    report = oom_report(_inputs(name, ".message.txt", ".summary.txt", ".nvidia-smi.txt", ".snapshot.pickle"),
                        meta["estimator_args"])
    tensor, term, change = EXPECTED[name]
    assert report.likely_tensor is not None
    assert (report.likely_tensor.name, report.likely_tensor.term) == (tensor, term)
    top = report.suggestions[0]
    assert top.change == change and top.fits
    applied = {k: v for k, v in meta["fix"].items() if k != "env"}
    for option, value in applied.items():  # the change that ran is the change ranked first
        assert f"--{option} {value}" in top.change
    if "env" in meta["fix"]:
        assert meta["fix"]["env"] in top.change


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_message_alone_finds_the_same_tensor(name: str) -> None:
    """Without the snapshot, the message's two-decimal size still singles out the tensor (by size alone)."""
    meta = json.loads((DATA / f"{name}.json").read_text())
    report = oom_report(_inputs(name, ".message.txt"), meta["estimator_args"])
    assert report.likely_tensor is not None
    names = [report.likely_tensor.name] + [m.name for m in report.other_matches]
    assert EXPECTED[name][0] in names


def test_top_change_fits_by_the_estimate() -> None:
    """The fixed workload's own estimate fits (the figure the tool shows is the estimate re-run)."""
    from estimator.cli.estimate import estimate_params, report_for_params

    for name in ("batch", "logits", "eager-attention", "optimizer-step"):
        meta = json.loads((DATA / f"{name}.json").read_text())
        assert not report_for_params(estimate_params(meta["estimator_args"])).memory.fits, name
        assert report_for_params(estimate_params(meta["fixed_estimator_args"])).memory.fits, name


def test_without_a_workload_the_message_is_still_explained() -> None:
    report = oom_report(_inputs("fragmentation", ".message.txt"), [])
    assert report.prediction is None
    # 67.76 GiB reserved but unallocated ≥ the 2.00 GiB request: the allocator's own test for fragmentation
    assert report.card.fragmented
    assert report.card.requested_bytes == 2 * 2**30
    assert report.suggestions[0].change.startswith("set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
