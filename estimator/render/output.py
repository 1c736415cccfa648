"""Output files: checked before any work starts, written atomically.

A target is checked when the command line is parsed (a missing folder, a folder given as the file, a folder one
cannot write to), so a bad ``-o`` or ``--plot`` costs one line and no partial output. A file is written to a
temporary name beside it and renamed over the target only when complete, so a killed run or a full disk never
leaves a truncated file nor loses the previous one.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from estimator.errors import FieldInvalid, WorkloadInvalid


def check_target(path: Path, *, force: bool = False) -> None:
    """Refuse, with one line, an output path that cannot be written, or that exists unless ``force``."""
    try:
        if path.is_dir():
            raise WorkloadInvalid(f"{path} is a folder: give a file name inside it")
        folder = path.parent if str(path.parent) else Path(".")
        if not folder.is_dir():
            raise WorkloadInvalid(f"cannot write {path}: folder {folder} does not exist")
        if not os.access(folder, os.W_OK):
            raise WorkloadInvalid(f"cannot write {path}: folder {folder} is not writable")
        # what the atomic write will do, tried now: a file beside the target (refused in /proc, on a full disk...)
        handle, probe = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".probe")
        os.close(handle)
        os.unlink(probe)
        if path.exists() and not os.access(path, os.W_OK):
            raise WorkloadInvalid(f"cannot write {path}: the file is read-only")
        if path.exists() and not force:
            raise FieldInvalid("force", "{path} exists: pass {force} to replace it", path=path)
    except OSError as error:  # a name too long, a path through a file
        raise WorkloadInvalid(f"cannot write {path}: {error.strerror or error}") from None


def said_written(path: Path, kind: str, rows: int | None = None) -> None:
    """One line on stderr saying what a command wrote: ``wrote plan.csv (CSV, 14 rows, 3.2 kB)``; stdout stays
    the document's alone, so a user who asked for a file is told where it went and how big it is."""
    from estimator.units import format_bytes

    size = format_bytes(path.stat().st_size, binary=False)
    count = "" if rows is None else f"{rows:,} row{'' if rows == 1 else 's'}, "
    sys.stderr.write(f"wrote {path} ({kind}, {count}{size})\n")


@contextlib.contextmanager
def atomic_path(path: Path, kind: str = "", rows: Callable[[], int | None] = lambda: None) -> Iterator[Path]:
    """A temporary path beside ``path``; renamed over it when the block completes, removed if it fails or is
    interrupted (Ctrl-C; SIGTERM and SIGHUP too, which the console scripts raise as an exception: see
    `estimator.cli.process`), from the moment it exists. With a ``kind`` (CSV, PNG chart...), the write is said
    on stderr (`said_written`), with the rows ``rows`` counts once written."""
    temporary = ""
    try:
        # the name is held before the file exists: a signal raised between creating it and naming it (inside
        # tempfile.mkstemp) would leave a file no one removes
        folder = path.parent if str(path.parent) else Path(".")
        for _ in range(100):
            temporary = str(folder / f".{path.name}.{secrets.token_hex(6)}{path.suffix or '.tmp'}")
            try:
                os.close(os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                break
            except FileExistsError:
                continue
        else:
            raise WorkloadInvalid(f"cannot write {path}: no free temporary name beside it")
        yield Path(temporary)
        os.chmod(temporary, _mode_for(path))
        os.replace(temporary, path)
        if kind:
            said_written(path, kind, rows())
    finally:
        if temporary:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)


def _mode_for(path: Path) -> int:
    """The replaced file's permissions, or what a new file gets under the user's umask (mkstemp makes 0600)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_text_atomically(path: Path, write: Callable[[TextIO], object], kind: str = "") -> None:
    """``write(handle)`` into ``path`` as one atomic replacement, said on stderr with ``kind`` (and the rows, where
    ``write`` returns their count)."""
    written: list[object] = []
    with atomic_path(path, kind, lambda: next((n for n in written if isinstance(n, int)), None)) as temporary, \
            temporary.open("w", encoding="utf-8", newline="") as handle:
        written.append(write(handle))


MAX_ROWS_FILE_BYTES = 1 << 30  # 1 GiB of measured rows (about 1 kB a row): read whole to append atomically


def check_rows_target(path: Path, *, force: bool = False) -> None:
    """An append target (``validate --save``), checked before measuring: writable, and when it exists, already a
    file of rows (JSON lines of objects, as an earlier ``--save`` wrote), else refused unless ``force``."""
    check_target(path, force=True)
    if force or not path.exists():
        return
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_ROWS_FILE_BYTES + 1)
    except OSError as error:
        raise WorkloadInvalid(f"cannot read {path}: {error.strerror or error}") from None
    if len(raw) > MAX_ROWS_FILE_BYTES or not _json_object_lines(raw):
        raise FieldInvalid("force", "{path} is not a file of measured rows (JSON lines): pass {force} to replace it",
                           path=path)


def _json_object_lines(raw: bytes) -> bool:
    try:
        return all(isinstance(json.loads(line), dict) for line in raw.decode("utf-8").splitlines() if line.strip())
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False


def append_lines(path: Path, lines: list[str], *, replace: bool = False) -> None:
    """``lines`` after what ``path`` holds (nothing when ``replace``), as one atomic replacement: a killed run or a
    full disk leaves the earlier rows whole."""
    earlier = b"" if replace or not path.exists() else path.read_bytes()
    with atomic_path(path, "JSON lines", lambda: (earlier.count(b"\n") + len(lines))) as temporary:
        temporary.write_bytes(earlier + "".join(lines).encode("utf-8"))
