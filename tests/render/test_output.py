"""Output targets are refused before any work, and files are replaced whole or not at all."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

import pytest

from estimator.errors import WorkloadInvalid
from estimator.render.output import check_target, write_text_atomically


def test_a_missing_folder_a_folder_and_a_path_through_a_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(WorkloadInvalid, match="does not exist"):
        check_target(tmp_path / "missing" / "out.csv")
    with pytest.raises(WorkloadInvalid, match="is a folder"):
        check_target(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(WorkloadInvalid, match="cannot write"):
        check_target(blocker / "out.csv")  # a folder that is a file: refused even for root, unlike a read-only one


def test_a_failed_write_keeps_the_previous_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "grid.csv"
    target.write_text("old,complete\n")

    def dies_halfway(handle: TextIO) -> None:
        handle.write("new,part")
        raise KeyboardInterrupt  # a killed run

    with pytest.raises(KeyboardInterrupt):
        write_text_atomically(target, dies_halfway)
    assert target.read_text() == "old,complete\n"
    assert [p.name for p in tmp_path.iterdir()] == ["grid.csv"]


def test_a_complete_write_replaces_the_file_with_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "plan.csv"
    target.write_text("old\n")
    target.chmod(0o640)
    write_text_atomically(target, lambda handle: handle.write("new\n"))
    assert target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o640


def test_a_folder_where_no_file_can_be_made_is_refused_before_work() -> None:
    """Fuzz class 'partial stdout on error': plan printed its table, then failed to write into /proc."""
    with pytest.raises(WorkloadInvalid, match="cannot write"):
        check_target(Path("/proc/version"))
