"""Where the packaged specs live, and the one guarded reader every YAML and JSON file the tool reads goes through.

A hostile or mistaken file costs one line, never a hang: its bytes are capped before parsing (`read_limited`), and
its parsed value is measured before anything walks it (`check_shape`) — a YAML alias bomb ("billion laughs") parses
in a millisecond into a small graph of shared lists, and only what walks it whole (a JSON dump, a hash, a copy)
hangs, so the value is refused when its aliases expand past what a file of the byte ceiling could hold.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from estimator.errors import SpecInvalid

# Ceilings on what a file may hold, checked before it is parsed (a hostile or mistaken file costs one line, not the
# memory and minutes of parsing it). Each is far past any real file of its kind:
MAX_SPEC_FILE_BYTES = 1 << 20  # 1 MiB for a YAML spec, calibration or prices file: the largest shipped is under
#                                6 KB (specs/profiles/hf.yaml), a calibration file holds about 1 KB per card
MAX_CONFIG_BYTES = 16 << 20  # 16 MiB for a config.json (a file or a body sent to `estimator serve`): published
#                              configs carry per-layer lists and per-module quantization tables; MiniMax-M3's is
#                              3.1 MB, so 16 MiB leaves five times that (JSON has no aliases: its weight is its bytes')
MAX_INDEX_BYTES = 64 << 20  # 64 MiB for a model.safetensors.index.json: about 100 B per tensor, so 600,000
#                             tensors (DeepSeek-V3 has about 91,000)
MAX_EXPANDED = 1 << 20  # weight of a parsed value with every alias followed (`check_shape`): a container or a
#                         number counts 1, a string 1 per 8 characters; a file of the byte ceiling without aliases
#                         weighs at most ~524,000 (`[0,0,…]`, two bytes a value), so only aliases reach this
MAX_DEPTH = 64  # nesting of mappings and lists: a config.json nests 4 deep, a spec file 5 (families' rules)


def read_limited(path: Path, limit: int, what: str) -> bytes:
    """The bytes of ``path``, refused with one line if there are more than ``limit``: read at most one byte past
    the limit, so an endless device or a huge file is never read whole."""
    try:
        with path.open("rb") as file:
            raw = file.read(limit + 1)
    except OSError as error:
        raise SpecInvalid(f"{path}: cannot read{' ' + what if what else ''}: {error.strerror or error}") from None
    if len(raw) > limit:
        raise SpecInvalid(f"{path}: larger than {limit:,} bytes ({limit >> 20} MiB), the most a "
                          f"{what or 'spec file'} may hold; refused before parsing")
    return raw


def unreadable(error: BaseException) -> str:
    """A value the parser could not make, in the tool's words: Python's own for an integer of too many digits
    ("Exceeds the limit (4300 digits) … use sys.set_int_max_str_digits()") tells the user to change the interpreter."""
    if isinstance(error, RecursionError):
        return f"nested more than {MAX_DEPTH} levels deep; refused"
    if "digits" in str(error):
        return "a number of more than 4,300 digits; no size or count is that long"
    return f"unreadable value: {str(error).splitlines()[0][:120]}"


def default_specs_dir() -> Path:
    """The specs folder shipped with the package (inside the wheel), or the repository's when run from source."""
    package = Path(__file__).resolve().parent.parent  # estimator/
    packaged = package / "specs"
    if packaged.is_dir():
        return packaged
    return package.parent / "specs"


def user_specs_dir() -> Path | None:
    """``<user config dir>/estimator/specs`` (platformdirs; $XDG_CONFIG_HOME on Linux) when it exists: the user's
    own cards, models and systems, laid over the packaged catalog file by file. ``ESTIMATOR_NO_USER_SPECS=1``
    leaves it out (tests, or to see the packaged catalog alone)."""
    import os

    if os.environ.get("ESTIMATOR_NO_USER_SPECS"):
        return None
    from platformdirs import user_config_dir

    folder = Path(user_config_dir("estimator")) / "specs"
    return folder if folder.is_dir() else None


def check_shape(data: Any, where: object, *, aliased: bool = True) -> Any:
    """``data`` itself, refused with one line naming ``where`` when it holds a NaN, nests deeper than `MAX_DEPTH`,
    refers to itself, or (``aliased``: parsed YAML) weighs more than `MAX_EXPANDED` with its aliases followed. A NaN
    passes every range check (each comparison is false), so no file may hold one; an infinity is left to the schema
    that reads the value (a published config.json holds one: Nemotron-H's ``time_step_limit``). Each shared
    list or mapping is measured once (by identity), so a nine-level alias bomb costs ~90 steps, not 9⁹. JSON has no
    aliases: its weight is its bytes', capped before parsing."""
    measured: dict[int, tuple[int, int]] = {}  # id → (weight, height); (-1, -1) while being measured

    def too_deep() -> SpecInvalid:
        return SpecInvalid(f"{where}: nested more than {MAX_DEPTH} levels deep; refused")

    def measure(value: Any, depth: int) -> tuple[int, int]:
        if isinstance(value, str):
            return 1 + len(value) // 8, 0
        if isinstance(value, float) and math.isnan(value):
            raise _NaN()
        if not isinstance(value, (dict, list, tuple)):
            return 1, 0
        if depth > MAX_DEPTH:
            raise too_deep()
        known = measured.get(id(value))
        if known is not None:
            if known[0] < 0:
                raise SpecInvalid(f"{where}: a value that contains itself (a YAML alias to its own anchor)")
            if depth + known[1] > MAX_DEPTH:
                raise too_deep()
            return known
        measured[id(value)] = (-1, -1)
        weight, height = 1, 0
        named = value.items() if isinstance(value, dict) else enumerate(value)
        for name, child in named:
            try:
                child_weight, child_height = measure(child, depth + 1)
            except _NaN as nan:
                nan.keys.append(str(name))  # the key is named only on the way out: the walk builds no names
                raise
            weight, height = weight + child_weight, max(height, child_height + 1)
            if aliased and weight > MAX_EXPANDED:
                raise SpecInvalid(f"{where}: its aliases expand past {MAX_EXPANDED:,} values, more than any file "
                                  f"of {MAX_SPEC_FILE_BYTES >> 20} MiB holds (a YAML alias bomb?); refused")
        measured[id(value)] = (weight, height)
        return weight, height

    try:
        measure(data, 0)
    except _NaN as nan:
        key = ".".join(reversed(nan.keys)) or "the value"
        raise SpecInvalid(f"{where}: {key} is NaN (not a number); every number must be finite") from None
    return data


class _NaN(Exception):
    """A NaN found by `check_shape`, gathering its keys as it unwinds."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[str] = []


def parse_json(raw: bytes, where: object) -> Any:
    """Parse JSON bytes (a config.json, a safetensors index or header, a request body) and `check_shape` the
    value; any problem is one SpecInvalid naming ``where``."""
    import json

    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SpecInvalid(f"{where}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise SpecInvalid(f"{where}: malformed JSON: {error}") from None
    except RecursionError:
        raise SpecInvalid(f"{where}: nested more than {MAX_DEPTH} levels deep; refused") from None
    except ValueError as error:  # an integer of more digits than Python converts (4,300)
        raise SpecInvalid(f"{where}: {unreadable(error)}") from None
    return check_shape(data, where, aliased=False)


def read_json(path: Path, limit: int, what: str) -> Any:
    """One JSON file, at most ``limit`` bytes, parsed by `parse_json`."""
    return parse_json(read_limited(path, limit, what), path)


def read_mapping(path: Path, what: str) -> dict[str, Any]:
    """One YAML file that must hold a mapping (a costs, prices or calibration file): anything else is one line
    saying what the file holds instead."""
    data = read_yaml(path, what)
    if not isinstance(data, dict):
        raise SpecInvalid(f"{path}: a {what or 'spec file'} is a mapping of keys; this one holds {held(data)}")
    return data


_KIND = {list: "a list", str: "text", int: "a number", float: "a number", bool: "true or false"}


def held(data: Any) -> str:
    """What a parsed file holds, in a user's words (an empty file holds nothing, not ``NoneType``)."""
    return "nothing" if data is None else _KIND.get(type(data), f"a {type(data).__name__}")


def read_yaml(path: Path, what: str = "") -> Any:
    """Parse one YAML file with the safe loader and `check_shape` the value; a problem becomes SpecInvalid naming
    the file (and ``what``)."""
    import yaml  # only when a file is parsed: the parsed-spec cache serves most starts without PyYAML (~8 ms)

    # libyaml's safe loader when PyYAML was built with it (10× faster: 0.24 s → 0.024 s for the catalog); the
    # pure-Python SafeLoader otherwise. Both construct plain types only, as safe_load does.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    raw = read_limited(path, MAX_SPEC_FILE_BYTES, what)
    try:
        data = yaml.load(raw.decode("utf-8"), Loader=loader)
    except UnicodeDecodeError as error:
        raise SpecInvalid(f"{path}: cannot read{' ' + what if what else ''}: {error}") from None
    except yaml.YAMLError as error:
        raise SpecInvalid(f"{path}: malformed YAML: {str(error).splitlines()[0]}") from None
    except (ValueError, RecursionError) as error:  # an integer of more than 4,300 digits; nesting beyond the stack
        raise SpecInvalid(f"{path}: {unreadable(error)}") from None
    return check_shape(data, path)
