"""A failed job's output that claims a figure no device reports (a negative size, more free or held than the card
has, a non-finite or fractional byte count) is refused with one line naming the figure; real captures still read."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from estimator.errors import ECHO_MAX, EstimatorError, echoed
from estimator.oom.bounds import SIZE_MAX
from estimator.oom.evidence import gather
from estimator.oom.parse import parse_message, parse_nvidia_smi, parse_summary
from estimator.oom.snapshot import SnapshotRefused, snapshot_facts

DATA = Path(__file__).resolve().parent.parent / "data" / "oom"
GIB = 2**30
MESSAGE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "79.10 GiB of which {free} is free. Including non-PyTorch memory, this process has 78.00 GiB memory in "
           "use. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 5.00 GiB is reserved by PyTorch but "
           "unallocated.\n")


def _snapshot(segment: dict[str, Any] | None = None, oom: dict[str, Any] | None = None) -> bytes:
    segments = [{"total_size": 2 * GIB, "allocated_size": GIB, "blocks": []} if segment is None else segment]
    return pickle.dumps({"segments": segments,
                         "device_traces": [[{"action": "oom", "size": GIB, **(oom or {})}]]})


def _refused(error: pytest.ExceptionInfo[EstimatorError], *fragments: str) -> None:
    message = str(error.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


def test_a_snapshot_with_a_negative_segment_size_is_refused() -> None:
    with pytest.raises(SnapshotRefused) as error:
        snapshot_facts(_snapshot({"total_size": -5, "allocated_size": 0, "blocks": []}))
    _refused(error, "segment 0 total_size", "-5", "negative")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1.5, "abc", True, None, [1]])
def test_a_snapshot_size_that_is_no_whole_finite_number_is_refused(value: Any) -> None:
    with pytest.raises(SnapshotRefused) as error:
        snapshot_facts(_snapshot(oom={"device_free": value}))
    _refused(error, "device_free at the failure")


def test_a_snapshot_size_beyond_size_t_is_refused() -> None:
    with pytest.raises(SnapshotRefused) as error:
        snapshot_facts(_snapshot(oom={"device_free": 10**29}))
    _refused(error, "device_free", "2**64 - 1")
    assert snapshot_facts(_snapshot(oom={"size": SIZE_MAX})).oom_request_bytes == SIZE_MAX  # the largest size_t


def test_a_snapshot_segment_with_more_allocated_than_its_size_is_refused() -> None:
    with pytest.raises(SnapshotRefused) as error:
        snapshot_facts(_snapshot({"total_size": GIB, "allocated_size": 2 * GIB}))
    _refused(error, "segment 0 allocated_size", "its total_size")
    with pytest.raises(SnapshotRefused) as error:
        snapshot_facts(_snapshot({"total_size": GIB, "blocks": [{"state": "inactive", "size": 2 * GIB}]}))
    _refused(error, "segment 0 free block")


def test_a_snapshot_with_lists_replaced_by_numbers_reads_without_a_crash() -> None:
    data = pickle.dumps({"segments": [{"total_size": GIB, "blocks": 7}], "device_traces": 3})
    facts = snapshot_facts(data)
    assert facts.reserved_bytes == GIB and facts.oom_request_bytes is None


def test_snapshot_free_beyond_the_card_capacity_is_refused() -> None:
    text = MESSAGE.format(free="1.00 GiB").encode()
    with pytest.raises(EstimatorError) as error:
        gather([("err.txt", text), ("snap.pickle", _snapshot(oom={"device_free": 80 * GIB}))])
    _refused(error, "the snapshot's device_free at the failure", "the card's total capacity")
    evidence = gather([("err.txt", text), ("snap.pickle", _snapshot(oom={"device_free": GIB}))])
    assert evidence.snapshot is not None and evidence.snapshot.oom_device_free_bytes == GIB


@pytest.mark.parametrize(("free", "fragment"), [("100000000000000000000000000000 B", "2**64 - 1"),
                                                ("100.00 GiB", "the card's total capacity")])
def test_message_free_beyond_the_card_capacity_is_refused(free: str, fragment: str) -> None:
    with pytest.raises(EstimatorError) as error:
        parse_message(MESSAGE.format(free=free))
    _refused(error, "the message's free size", fragment)


def test_message_with_a_number_that_is_no_number_is_refused() -> None:
    with pytest.raises(EstimatorError) as error:
        parse_message("CUDA out of memory. Tried to allocate 1.2.3 GiB. GPU 0\n")
    _refused(error, "the message's requested size", "'1.2.3 GiB'", "not a number")


def test_message_with_a_size_of_thousands_of_digits_is_refused_and_echoed_short() -> None:
    with pytest.raises(EstimatorError) as error:
        parse_message("CUDA out of memory. Tried to allocate " + "9" * 5000 + " GiB. GPU 0\n")
    _refused(error, "the message's requested size")
    assert len(str(error.value)) < ECHO_MAX + 100 and "…" in str(error.value)
    with pytest.raises(EstimatorError) as error:
        parse_message("CUDA out of memory. Tried to allocate 2.00 GiB. GPU " + "1" * 5000 + " has\n")
    _refused(error, "the message's GPU index")


def test_message_before_pytorch_2_1_with_more_allocated_than_reserved_is_refused() -> None:
    with pytest.raises(EstimatorError) as error:
        parse_message("RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 15.78 GiB total "
                      "capacity; 14.10 GiB already allocated; 310.75 MiB free; 4.60 GiB reserved in total by PyTorch)")
    _refused(error, "allocated size", "reserved in total")


def test_nvidia_smi_used_beyond_total_is_refused() -> None:
    with pytest.raises(EstimatorError) as error:
        parse_nvidia_smi("NVIDIA-SMI 580\n|  150000MiB / 143771MiB |\n")
    _refused(error, "nvidia-smi's used memory", "its total memory")


def test_summary_allocated_beyond_reserved_is_refused() -> None:
    text = (DATA / "batch.summary.txt").read_text().replace("|  31078 MiB |  96614 MiB", "| 131078 MiB |  96614 MiB")
    with pytest.raises(EstimatorError) as error:
        parse_summary(text)
    _refused(error, "the summary's allocated memory", "its reserved memory")


@pytest.mark.parametrize("name", ["batch", "eager-attention", "fragmentation", "logits", "optimizer-step"])
def test_captured_outputs_are_within_bounds(name: str) -> None:
    inputs = [(f"{name}.{part}", (DATA / f"{name}.{part}").read_bytes())
              for part in ("message.txt", "summary.txt", "nvidia-smi.txt", "snapshot.pickle")]
    evidence = gather(inputs)
    assert evidence.message is not None and evidence.summary is not None and evidence.nvidia_smi is not None
    assert evidence.snapshot is not None


def test_echoed_input_is_cut_at_the_limit() -> None:
    assert echoed("x" * ECHO_MAX) == "x" * ECHO_MAX
    assert echoed("x" * (ECHO_MAX + 1)) == "x" * (ECHO_MAX - 1) + "…"


@pytest.mark.parametrize("key", ["device_free", "size"])
def test_a_snapshot_size_of_thousands_of_digits_is_one_line_not_a_traceback(key: str) -> None:
    """A crafted snapshot's size of 10**10000 bytes: Python refuses to write an integer of over 4,300 digits as
    text, so echoing it raised ValueError out of `oom` (a traceback); it is now named by its length."""
    with pytest.raises(SnapshotRefused) as error:
        snapshot_facts(_snapshot(oom={key: 10**10_000}))
    _refused(error, "(a 33,220-bit integer)", "over 2**64 - 1 bytes")


def test_a_snapshot_frame_with_a_line_past_any_file_is_left_out() -> None:
    frames = [{"filename": "train.py", "line": 10**10_000, "name": "step"}, {"filename": "a.py", "line": 7,
                                                                            "name": "f"}]
    facts = snapshot_facts(_snapshot(oom={"frames": frames}))
    assert [(f.filename, f.line) for f in facts.oom_frames] == [("a.py", 7)]
