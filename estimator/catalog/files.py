"""Where the packaged specs live, and the one YAML reader every spec file goes through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from estimator.errors import SpecInvalid

# Ceilings on what a file may hold, checked before it is parsed (a hostile or mistaken file costs one line, not the
# memory and minutes of parsing it). Each is far past any real file of its kind:
MAX_SPEC_FILE_BYTES = 1 << 20  # 1 MiB for a YAML spec, calibration or prices file: the largest shipped is under
#                                6 KB (specs/profiles/hf.yaml), a calibration file holds about 1 KB per card
MAX_CONFIG_BYTES = 1 << 20  # 1 MiB for a config.json, as `estimator serve` takes in a body: the largest in
#                             tests/data/configs is 5.4 KB (Kimi-K2.5)
MAX_INDEX_BYTES = 64 << 20  # 64 MiB for a model.safetensors.index.json: about 100 B per tensor, so 600,000
#                             tensors (DeepSeek-V3 has about 91,000)


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


def default_specs_dir() -> Path:
    """The specs folder shipped with the package (inside the wheel), or the repository's when run from source."""
    package = Path(__file__).resolve().parent.parent  # estimator/
    packaged = package / "specs"
    if packaged.is_dir():
        return packaged
    return package.parent / "specs"


def read_yaml(path: Path, what: str = "") -> Any:
    """Parse one YAML file with the safe loader; a problem becomes SpecInvalid naming the file (and ``what``)."""
    import yaml  # only when a file is parsed: the parsed-spec cache serves most starts without PyYAML (~8 ms)

    # libyaml's safe loader when PyYAML was built with it (10× faster: 0.24 s → 0.024 s for the catalog); the
    # pure-Python SafeLoader otherwise. Both construct plain types only, as safe_load does.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    raw = read_limited(path, MAX_SPEC_FILE_BYTES, what)
    try:
        return yaml.load(raw.decode("utf-8"), Loader=loader)
    except UnicodeDecodeError as error:
        raise SpecInvalid(f"{path}: cannot read{' ' + what if what else ''}: {error}") from None
    except yaml.YAMLError as error:
        raise SpecInvalid(f"{path}: malformed YAML: {str(error).splitlines()[0]}") from None
    except (ValueError, RecursionError) as error:  # an integer of more than 4,300 digits; nesting beyond the stack
        raise SpecInvalid(f"{path}: unreadable value: {str(error).splitlines()[0][:120]}") from None
