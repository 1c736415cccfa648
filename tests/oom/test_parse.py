"""Reading the OutOfMemoryError message, memory_summary() and nvidia-smi (texts captured on the H200)."""

from __future__ import annotations

from pathlib import Path

from estimator.oom.parse import Size, parse_message, parse_nvidia_smi, parse_summary

DATA = Path(__file__).resolve().parent.parent / "data" / "oom"
GIB, MIB = 2**30, 2**20


def test_message_fields() -> None:
    m = parse_message((DATA / "batch.message.txt").read_text())
    assert m is not None
    assert m.requested == Size(bytes=32 * GIB, resolution_bytes=GIB // 200)  # "32.00 GiB": ± half of 0.01 GiB
    assert m.device == 0
    assert m.capacity is not None and m.capacity.bytes == round(139.80 * GIB)
    assert m.free is not None and m.free.bytes == round(16.33 * GIB)
    assert m.process_in_use is not None and m.process_in_use.bytes == round(123.46 * GIB)
    assert m.allocated is not None and m.allocated.bytes == round(94.35 * GIB)
    assert m.reserved_unallocated is not None and m.reserved_unallocated.bytes == round(28.44 * GIB)
    assert m.other_processes == ()


def test_message_inside_a_traceback_and_other_processes() -> None:
    text = ("Traceback (most recent call last):\n  File \"train.py\", line 3\ntorch.OutOfMemoryError: CUDA out of "
            "memory. Tried to allocate 20.00 MiB. GPU 1 has a total capacity of 79.19 GiB of which 1.02 GiB is free. "
            "Process 4242 has 30.00 GiB memory in use. Including non-PyTorch memory, this process has 48.16 GiB "
            "memory in use. Of the allocated memory 46.10 GiB is allocated by PyTorch, and 1.90 GiB is reserved by "
            "PyTorch but unallocated.\n")
    m = parse_message(text)
    assert m is not None
    assert m.requested.bytes == 20 * MIB and m.device == 1
    assert m.other_processes == ((4242, Size(bytes=30 * GIB, resolution_bytes=GIB // 200)),)


def test_message_of_pytorch_before_2_1() -> None:
    text = ("RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 15.78 GiB total capacity; "
            "14.10 GiB already allocated; 310.75 MiB free; 14.60 GiB reserved in total by PyTorch)")
    m = parse_message(text)
    assert m is not None
    assert m.requested.bytes == 512 * MIB
    assert m.capacity is not None and m.capacity.bytes == round(15.78 * GIB)
    assert m.allocated is not None and m.allocated.bytes == round(14.10 * GIB)
    assert m.reserved_unallocated is not None  # reserved in total − allocated
    assert m.reserved_unallocated.bytes == round(14.60 * GIB) - round(14.10 * GIB)


def test_no_message() -> None:
    assert parse_message("RuntimeError: shape mismatch") is None


def test_summary_rows() -> None:
    s = parse_summary((DATA / "optimizer-step.summary.txt").read_text())
    assert s is not None
    assert s.allocated == Size(bytes=122596 * MIB, resolution_bytes=MIB // 2)  # "122596 MiB" (whole MiB)
    assert s.allocated_peak.bytes == 137176 * MIB
    assert s.reserved.bytes == 142332 * MIB
    assert s.non_releasable is not None and s.non_releasable.bytes == 5283 * MIB
    assert (s.ooms, s.cudamalloc_retries) == (1, 2)
    assert parse_summary("nothing here") is None


def test_nvidia_smi() -> None:
    r = parse_nvidia_smi((DATA / "logits.nvidia-smi.txt").read_text())
    assert r is not None
    assert r.total.bytes == 143771 * MIB  # the H200's 143,771 MiB
    assert [p.pid for p in r.processes] == [715]
    assert r.processes[0].used is not None and r.processes[0].used.bytes == 30172 * MIB
    truncated = parse_nvidia_smi((DATA / "batch.nvidia-smi.txt").read_text())
    assert truncated is not None and truncated.processes[0].used is None  # "14309..." cut by nvidia-smi
