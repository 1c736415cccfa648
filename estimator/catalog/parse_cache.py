"""A cache of parsed spec files, keyed by each file's content, so a command does not re-parse 90 YAML files.

Parsing every spec file costs ~20–30 ms of each cold start (libyaml's parser, PyYAML's Python constructor);
reading them and hashing their bytes costs ~1 ms, and loading the parsed data back from one JSON file ~0.5 ms.
An entry is keyed by the SHA-256 of the file's bytes, so an edited file is parsed again, never served stale; a file
whose data does not survive a JSON round trip (a YAML date, say) is never cached. The cache lives in the user's
cache folder (``ESTIMATOR_CACHE_DIR`` overrides it; ``ESTIMATOR_CACHE_DIR=off`` disables it), is written
atomically, and any problem reading or writing it only means parsing as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from estimator.catalog.files import MAX_SPEC_FILE_BYTES, read_limited
from estimator.errors import SpecInvalid

_FORMAT = 1  # bump when the cached representation changes
_MAX_ENTRIES = 4096  # a cache grown past this (many edited files over time) starts afresh
_MAX_BYTES = 64 << 20  # a cache file past this is not read: 4,096 entries of the largest shipped spec (< 6 KB)
#                        come to under 25 MiB


def cache_folder() -> Path | None:
    """The estimator's cache folder (``ESTIMATOR_CACHE_DIR``, else the user's cache folder); None when off."""
    setting = os.environ.get("ESTIMATOR_CACHE_DIR")
    if setting == "off":
        return None
    if setting:
        return Path(setting)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("estimator"))


def _cache_file() -> Path | None:
    folder = cache_folder()
    return None if folder is None else folder / "parsed-specs.json"


_loaded: dict[Path, dict[str, Any]] = {}  # each cache file is read once per process (a catalog reads 6 folders)


def _load(file: Path) -> dict[str, Any]:
    if file not in _loaded:
        _loaded[file] = _read(file)
    return _loaded[file]


def _read(file: Path) -> dict[str, Any]:
    """The cache's entries; a cache file that is unreadable, too large or malformed is no cache. An entry holds what
    `read_yaml` returned for a file and passed its checks (no alias bomb, no deep nesting reaches the cache: the
    parse refuses it first), written as JSON, which has no aliases. Not walked again by `check_shape`: the cache
    is read on every start, and its entries were checked before they were written."""
    try:
        data = json.loads(read_limited(file, _MAX_BYTES, "parsed-spec cache"))
    except (SpecInvalid, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("entries"), dict):
        return {}
    entries: dict[str, Any] = data["entries"]
    return entries


def _save(file: Path, entries: dict[str, Any]) -> None:
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=file.parent, prefix=".parsed-specs.", suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({"format": _FORMAT, "entries": entries}, out, separators=(",", ":"))
        os.replace(temporary, file)
    except OSError:
        return  # a read-only or full cache folder: the next run parses again


def _survives_json(data: Any) -> bool:
    try:
        return bool(json.loads(json.dumps(data)) == data)
    except (TypeError, ValueError):  # a date, a set, a NaN
        return False


def parse_all(paths: list[Path], parse: Callable[[Path], Any]) -> list[Any]:
    """``parse(path)`` for every path, served from the cache where a file's bytes are unchanged."""
    return [data for _, data in parse_all_keyed(paths, parse)]


def parse_all_keyed(paths: list[Path], parse: Callable[[Path], Any]) -> list[tuple[str | None, Any]]:
    """(the SHA-256 of the file's bytes, ``parse(path)``) for every path, served from the cache where a file's
    bytes are unchanged; the hash is None when the cache is off or the file unreadable."""
    file = _cache_file()
    if file is None:
        return [(None, parse(p)) for p in paths]
    entries = _load(file)
    changed = False
    out: list[tuple[str | None, Any]] = []
    for path in paths:
        try:
            key = hashlib.sha256(read_limited(path, MAX_SPEC_FILE_BYTES, "")).hexdigest()
        except SpecInvalid:
            out.append((None, parse(path)))  # parse() reports the unreadable or oversized file
            continue
        if key in entries:
            out.append((key, entries[key]))
            continue
        data = parse(path)
        out.append((key, data))
        if _survives_json(data):
            entries[key] = data
            changed = True
    if changed:
        if len(entries) > _MAX_ENTRIES:
            entries.clear()
        _save(file, entries)
    return out
