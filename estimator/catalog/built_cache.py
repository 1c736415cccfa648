"""A cache of built catalog specs (validated GPUs, models, formats, profiles, systems), so a start skips pydantic.

Building a catalog model from its YAML costs a cold start more than reading it: the decoder families, the
config.json reader and pydantic's validation (the family models' schemas, then the spec models'). The validated
objects are pickled beside the parsed-spec cache (`parse_cache.py`, whose folder and ``ESTIMATOR_CACHE_DIR=off``
this shares), one entry per spec file, keyed by the spec's kind, file name and content hash. The whole cache is
keyed by a signature of everything else a build reads: the source of ``estimator/catalog`` and the modules below
it, the family files, the package's ``__init__`` (its version), pydantic and Python versions. A changed file, a
changed reader or an upgrade gives a new signature, and with it a new cache file
(``built-specs-<signature>.pickle``): two installs or checkouts that share the cache folder (two virtual
environments, two versions) each keep their own file instead of each dropping the other's entries on every start;
the files not written most recently past `_KEEP` are removed. Anything wrong with the cache (unreadable,
truncated, an unexpected class) means building as before.

Unpickling runs no code but the estimator's own classes': the unpickler resolves only classes of the
``estimator`` package and a few plain types, and an entry must unpickle to the class its registry builds.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any

_FORMAT = 1  # bump when the cache file's layout changes
_MAX_ENTRIES = 4096  # a cache grown past this (many edited files over time) starts afresh, as the parse cache does
_KEEP = 4  # cache files of other signatures (other installs, older versions) kept beside the one written
_PATTERN = "built-specs*.pickle"  # this cache's files, and the one name earlier versions wrote (built-specs.pickle)
_PLAIN = {("pathlib", "PosixPath"), ("pathlib", "WindowsPath"), ("pathlib", "PurePosixPath"),
          ("pathlib", "PureWindowsPath"), ("fractions", "Fraction"), ("builtins", "frozenset"), ("builtins", "set"),
          ("builtins", "complex"), ("builtins", "slice"), ("builtins", "bytearray"), ("builtins", "range")}


class _Unpickler(pickle.Unpickler):
    """Resolves the estimator's own classes and a few plain types, nothing else (so no other code runs)."""

    def find_class(self, module: str, name: str) -> Any:
        if module.partition(".")[0] == "estimator" or (module, name) in _PLAIN:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not a catalog type")


def _loads(data: bytes) -> Any:
    return _Unpickler(io.BytesIO(data)).load()


def signature(package: Path, families: Path) -> str:
    """A hash of what a built spec depends on besides its own file (see the module docstring)."""
    digest = hashlib.sha256(f"{_FORMAT} {sys.version} {_pydantic_version()}".encode())
    # the package's __init__ holds its version: a release changes the signature as an edited source does
    sources = [package / "__init__.py", *sorted((package / "catalog").glob("*.py")), package / "errors.py",
               package / "units.py", package / "report.py", *sorted((package / "notes").glob("*.py")),
               *sorted(families.glob("*.yaml"))]
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _pydantic_version() -> str:
    import pydantic

    return str(pydantic.VERSION)


class BuiltCache:
    """The built specs of one cache file: `get` an entry, `put` one built; written once, at exit, if changed."""

    def __init__(self, file: Path, sig: str) -> None:
        self.file, self.signature = file, sig
        self.entries: dict[str, bytes] = _read(file, sig)
        self.changed = False

    def get(self, key: str, made: type[Any]) -> Any:
        """The object built for ``key`` when cached and of class ``made``; None otherwise."""
        data = self.entries.get(key)
        if data is None:
            return None
        try:
            found = _loads(data)
        except Exception:  # a truncated or foreign entry: build it again
            found = None
        if type(found) is not made:
            del self.entries[key]
            return None
        return found

    def put(self, key: str, built: Any) -> None:
        try:
            data = pickle.dumps(built, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # something in it does not pickle: it is built each time
            return
        if len(self.entries) >= _MAX_ENTRIES:
            self.entries.clear()
        self.entries[key] = data
        if not self.changed:
            self.changed = True
            atexit.register(self.save)

    def save(self) -> None:
        """Write the entries atomically; a folder that cannot be written only means building next time."""
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.file.parent, prefix=".built-specs.", suffix=".tmp")
            with os.fdopen(handle, "wb") as out:
                pickle.dump({"format": _FORMAT, "signature": self.signature, "entries": self.entries}, out,
                            protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, self.file)
        except OSError:
            return
        self.changed = False
        _prune(self.file.parent)


def _prune(folder: Path) -> None:
    """Remove this cache's files beyond the `_KEEP` + 1 written most recently (the other signatures')."""
    try:
        files = sorted(folder.glob(_PATTERN), key=lambda f: f.stat().st_mtime_ns, reverse=True)
        for old in files[_KEEP + 1:]:
            old.unlink()
    except OSError:  # another process removed or replaced one meanwhile: the next save prunes again
        return


def cache_file(folder: Path, sig: str) -> Path:
    """The cache file of the signature ``sig`` in ``folder``."""
    return folder / f"built-specs-{sig[:32]}.pickle"


def _read(file: Path, sig: str) -> dict[str, bytes]:
    try:
        data = _Unpickler(io.BytesIO(file.read_bytes())).load()  # a dict of str, int and bytes: no class at all
    except Exception:  # missing, unreadable, truncated, not ours
        return {}
    if not isinstance(data, dict) or data.get("format") != _FORMAT or data.get("signature") != sig:
        return {}
    entries = data.get("entries")
    if not isinstance(entries, dict) or not all(isinstance(k, str) and isinstance(v, bytes)
                                                for k, v in entries.items()):
        return {}
    return entries


_opened: dict[Path, BuiltCache] = {}  # by cache folder


def built_cache(folder: Path | None) -> BuiltCache | None:
    """The process's built-spec cache in ``folder`` (None: caching is off)."""
    if folder is None:
        return None
    if folder not in _opened:
        from estimator.catalog.files import default_specs_dir

        package = Path(__file__).resolve().parent.parent
        try:
            sig = signature(package, default_specs_dir() / "families")
        except OSError:
            return None
        _opened[folder] = BuiltCache(cache_file(folder, sig), sig)
    return _opened[folder]
