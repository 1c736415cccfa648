"""A snapshot is read without executing anything; one holding a non-container object is refused."""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path
from typing import Any

import pytest

from estimator.oom.snapshot import SnapshotRefused, load_plain, snapshot_facts

DATA = Path(__file__).resolve().parent.parent / "data" / "oom"


class _Exploit:
    """Unpickled normally, this would run a shell command that creates ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_that_would_execute_code_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    data = pickle.dumps({"segments": [], "device_traces": [[{"action": "oom", "size": _Exploit(marker)}]]})
    with pytest.raises(SnapshotRefused) as refused:
        snapshot_facts(data)
    assert not marker.exists()
    message = str(refused.value)
    assert "\n" not in message and "nothing was executed" in message
    assert "system" in message  # names what it refused (posix.system or nt.system)


def test_plain_containers_are_read() -> None:
    value = {"a": [1, 2.5, (3, None)], "b": {True, "x"}, "c": b"raw"}
    assert load_plain(pickle.dumps(value)) == value


def test_a_corrupt_pickle_is_one_line() -> None:
    with pytest.raises(SnapshotRefused, match="not a readable snapshot pickle"):
        load_plain(pickle.dumps({"segments": []})[:-3])


def test_a_pickle_that_is_no_snapshot() -> None:
    with pytest.raises(SnapshotRefused, match="no 'segments' list"):
        snapshot_facts(pickle.dumps([1, 2, 3]))


def test_captured_snapshot_facts() -> None:
    facts = snapshot_facts((DATA / "batch.snapshot.pickle").read_bytes())
    assert facts.oom_request_bytes == 1024 * 2048 * 8192 * 2  # the MLP intermediate: batch × tokens × ffn × bf16
    assert facts.expandable_segments is False
    assert facts.oom_frames[0].filename.endswith("modeling_llama.py")
    frag = snapshot_facts((DATA / "fragmentation.snapshot.pickle").read_bytes())
    assert frag.oom_request_bytes == 2 * 2**30
    assert frag.largest_free_block_bytes < frag.oom_request_bytes  # no cached block held the 2 GiB request


@pytest.mark.parametrize("shared", ["segment", "block", "trace", "trace entry"])
def test_a_snapshot_that_names_one_object_many_times_is_refused_at_once(shared: str) -> None:
    """A crafted pickle of a few kB can name one segment, block or trace entry thousands of times through pickle's
    memo (3,000 × 3,000 references, 24 kB, took 12 s of CPU to walk); PyTorch writes each as an object of its
    own, so one met twice is refused, in a line, before the walk grows with it."""
    import time

    block = {"size": 2**20, "state": "inactive"}
    entry = {"action": "oom", "size": 2**30}
    segment = {"total_size": 2**30, "allocated_size": 0, "blocks": [block] * 3000 if shared == "block" else []}
    segments = [segment] * 3000 if shared == "segment" else [dict(segment)]
    trace = [entry] * 3000 if shared == "trace entry" else [entry]
    traces = [trace] * 3000 if shared == "trace" else [trace]
    started = time.process_time()
    with pytest.raises(SnapshotRefused, match=f"names one {shared}( entry)?( list)? more than once"):
        snapshot_facts(pickle.dumps({"segments": segments, "device_traces": traces}))
    assert time.process_time() - started < 0.5  # the refusal measured 0.5 ms; the walk it replaces took 12 s


def test_a_snapshot_that_runs_out_of_memory_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                        capfd: pytest.CaptureFixture[str]) -> None:
    """A length field past the machine's memory: MemoryError, and what the interpreter prints on the way (a freed
    buffer's "SystemError: deallocated bytearray object has exported buffers", through sys.excepthook, seen by the
    fuzz campaign) stays off stderr: the user gets the one refusal."""
    from estimator.oom import snapshot

    def load(self: object) -> object:
        sys.excepthook(SystemError, SystemError("deallocated bytearray object has exported buffers"), None)
        raise MemoryError

    monkeypatch.setattr(snapshot._PlainUnpickler, "load", load)
    hooks = sys.excepthook, sys.unraisablehook
    with pytest.raises(snapshot.SnapshotRefused) as refused:
        snapshot.load_plain(b"\x80\x05.")
    assert str(refused.value) == "not a readable snapshot pickle: it asks for more memory than there is"
    assert capfd.readouterr().err == ""
    assert (sys.excepthook, sys.unraisablehook) == hooks  # restored, not left silenced


def test_a_length_past_the_machine_s_memory_is_one_line() -> None:
    from estimator.oom.snapshot import SnapshotRefused, load_plain

    with pytest.raises(SnapshotRefused, match="asks for more memory than there is"):
        load_plain(b"\x80\x05\x96" + (1 << 40).to_bytes(8, "little") + b"x.")  # BYTEARRAY8 of a terabyte
