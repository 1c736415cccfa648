"""The catalog: GPU, system, model, number-format and profile specs loaded from YAML, with alias resolution.

The packaged ``specs/`` folder is the default; ``Catalog.load(path)`` reads another folder with the same layout.
Models can also come from a local ``config.json`` (or a folder holding one), a bare size (``70b``) or a Hugging Face
Hub id (``openai/gpt-oss-120b``, `estimator.catalog.hub`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.built_cache import built_cache
from estimator.catalog.config_model import checkpoint_of, model_from_config, model_from_config_file, uncounted_towers
from estimator.catalog.files import default_specs_dir, held, read_yaml
from estimator.catalog.parse_cache import cache_folder, parse_all_keyed
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.specs import GpuSpec, NumberFormat
from estimator.catalog.systems import SystemSpec
from estimator.catalog.validation_words import validation_message
from estimator.errors import SpecInvalid, SpecNotFound
from estimator.units import parse_count

# default_specs_dir and read_yaml live in catalog/files.py (families need them below this module), validation_message
# in catalog/validation_words.py; re-exported here
__all__ = ["Catalog", "Registry", "default_catalog", "default_specs_dir", "model_from_config", "model_from_config_file",
           "model_from_mapping", "normalize", "read_yaml", "validation_message"]

if TYPE_CHECKING:
    from estimator.catalog.hub_names import HubRef

T = TypeVar("T")


_GENERIC_SIZE = re.compile(r"^\s*[0-9]*\.?[0-9]+(e[+-]?[0-9]+)?\s*[kmbgt]?\s*$", re.IGNORECASE)


_SEPARATORS = re.compile(r"[\s\-_./]")


def normalize(name: str) -> str:
    """Alias key: lower case without spaces, dashes, underscores, dots or slashes ('RTX-4090' == 'rtx4090')."""
    return _SEPARATORS.sub("", name.lower())


def _validated(kind: type[BaseModel], data: Any, path: Path) -> Any:
    if not isinstance(data, Mapping):
        raise SpecInvalid(f"{path}: a spec file is a mapping of keys; this one holds {held(data)}")
    try:
        return kind.model_validate(data)
    except ValidationError as error:
        raise SpecInvalid(f"{path}: {validation_message(error)}") from None


def model_from_mapping(data: Mapping[str, Any], path: Path) -> ModelSpec:
    """A catalog model file: metadata plus a Hugging Face config under ``config:``."""
    known = {"name", "aliases", "hf_params", "notes", "config", "sources"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise SpecInvalid(f"{path}: unknown keys {', '.join(unknown)}")
    if not isinstance(data.get("config"), Mapping):
        raise SpecInvalid(f"{path}: 'config' must be the model's config.json mapping")
    from estimator.catalog.hf_config import architecture_from_config  # the families load only for a build

    try:
        arch = architecture_from_config(data["config"])
    except SpecInvalid as error:
        raise SpecInvalid(f"{path}: {error}") from None
    checkpoint, checkpoint_error = checkpoint_of(data["config"])
    if checkpoint_error is not None:
        raise SpecInvalid(f"{path}: {checkpoint_error}")
    try:
        return ModelSpec(
            name=data.get("name", path.stem),
            aliases=tuple(data.get("aliases") or ()),
            arch=arch,
            hf_params=data.get("hf_params"),
            notes=data.get("notes"),
            sources=tuple(data.get("sources") or ()),
            uncounted_towers=uncounted_towers(data["config"], arch),
            checkpoint=checkpoint,
        )
    except ValidationError as error:
        raise SpecInvalid(f"{path}: {validation_message(error)}") from None


@dataclass(frozen=True)
class Registry(Generic[T]):
    """Named specs of one kind, found by name or alias (normalised), with close-match suggestions.

    Every file is parsed and indexed by its names when the catalog loads (so duplicate names and malformed YAML
    are caught at once), but a spec is validated only when first asked for: a command that needs one GPU and one
    model does not build all of them. Iterating validates everything. A built spec is kept in the built-spec
    cache (`built_cache.py`) by its file's content hash (``keys``), when it has one, and must be a ``made``.
    """

    kind: str
    entries: tuple[tuple[Path, Mapping[str, Any]], ...]
    build: Callable[[Mapping[str, Any], Path], T]
    listing: str = ""  # where the user sees every name (a command), said when no name is close
    keys: tuple[str | None, ...] = ()  # each entry's file hash from the parsed-spec cache (None: not cached)
    made: type[Any] | None = None  # the class ``build`` returns
    cache: Path | None = field(default_factory=cache_folder, compare=False)  # the cache folder, looked up once
    _index: dict[str, int] = field(default_factory=dict, compare=False)
    _spelled: dict[str, str] = field(default_factory=dict, compare=False)
    _built: dict[int, T] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for position, (path, data) in enumerate(self.entries):
            for name in _names(data, path):
                key = normalize(name)
                if self._index.get(key, position) != position:
                    first = self.entries[self._index[key]][0]
                    where = path if first == path else f"{first} and {path}"
                    raise SpecInvalid(f"{self.kind} name or alias {name!r} is used twice ({where})")
                self._index[key] = position
                self._spelled.setdefault(key, name)  # the canonical name wins over an alias spelled alike

    def _at(self, position: int) -> T:
        if position not in self._built:
            self._built[position] = self._cached_build(position)
        return self._built[position]

    def _cached_build(self, position: int) -> T:
        path, data = self.entries[position]
        sha = self.keys[position] if position < len(self.keys) else None
        store = built_cache(self.cache) if sha is not None and self.made is not None else None
        key = f"{self.kind}\0{path.name}\0{sha}"  # the file name too: a model's name defaults to it
        if store is not None and self.made is not None:
            found: T | None = store.get(key, self.made)
            if found is not None:
                return found
        built = self.build(data, path)
        if store is not None:
            store.put(key, built)
        return built

    def get(self, name: str) -> T:
        position = self._index.get(normalize(name))
        if position is None:
            close = self.suggest(name)
            raise SpecNotFound(self.kind, name, close, hint="" if close or not self.listing else
                               f"nothing in the catalog is spelled close to it; {self.listing}")
        return self._at(position)

    def suggest(self, name: str) -> list[str]:
        import difflib

        close = difflib.get_close_matches(normalize(name), list(self._spelled), n=3, cutoff=0.5)
        return [self._spelled[c] for c in close]

    def __iter__(self) -> Iterator[T]:
        return (self._at(position) for position in range(len(self.entries)))

    def __len__(self) -> int:
        return len(self.entries)


def _names(data: Mapping[str, Any], path: Path) -> list[str]:
    name = data.get("name", path.stem)
    aliases = data.get("aliases") or []
    if not isinstance(name, str) or not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise SpecInvalid(f"{path}: name must be a string and aliases a list of strings")
    return [name, *aliases]


def _checked(path: Path, data: Any) -> tuple[Path, Mapping[str, Any]]:
    if not isinstance(data, Mapping):
        raise SpecInvalid(f"{path}: a spec file is a mapping of keys; this one holds {held(data)}")
    return path, data


def _builder(kind: type[BaseModel]) -> Callable[[Mapping[str, Any], Path], Any]:
    def build(data: Mapping[str, Any], path: Path) -> Any:
        return _validated(kind, data, path)

    return build


@dataclass(frozen=True)
class Catalog:
    """Every spec the estimator knows; each is validated when first used (see `Registry`)."""

    gpus: Registry[GpuSpec]
    models: Registry[ModelSpec]
    formats: Registry[NumberFormat]
    profiles: Registry[EfficiencyProfile]
    root: Path
    systems: Registry[SystemSpec] = field(default_factory=lambda: Registry("system", (), _builder(SystemSpec)))
    layers: tuple[Path, ...] = ()

    @classmethod
    def load(cls, root: Path | None = None, over: tuple[Path, ...] = ()) -> Catalog:
        """Read and index every spec under ``root`` (default: the packaged specs), then under each folder of
        ``over`` in turn: a file there adds to the catalog, or replaces the file of the same name before it (a
        user's specs folder changes one card without copying the rest). Errors name the file."""
        root = default_specs_dir() if root is None else root
        for folder in (root, *over):
            if not folder.is_dir():
                raise SpecInvalid(f"specs folder not found: {folder}")

        def files(sub: str) -> list[Path]:
            return layered_files((root, *over), sub)

        def registry(kind: str, sub: str, made: type[Any], build: Callable[[Mapping[str, Any], Path], Any],
                     listing: str = "") -> Registry[Any]:
            paths = files(sub)
            parsed = parse_all_keyed(paths, read_yaml)
            return Registry(kind, tuple(_checked(p, data) for p, (_, data) in zip(paths, parsed, strict=True)), build,
                            listing=listing, keys=tuple(key for key, _ in parsed), made=made)

        return cls(
            gpus=registry("GPU", "gpus", GpuSpec, _builder(GpuSpec), listing="`estimator gpus` lists every card"),
            models=registry("model", "models", ModelSpec, model_from_mapping),
            formats=registry("dtype", "quant", NumberFormat, _builder(NumberFormat)),
            profiles=registry("profile", "profiles", EfficiencyProfile, _builder(EfficiencyProfile)),
            root=root,
            systems=registry("system", "systems", SystemSpec, _builder(SystemSpec),
                             listing="`estimator systems` lists every server"),
            layers=over,
        )

    def file(self, name: str) -> Path:
        """``name`` (such as ``costs.yaml``) from the last folder that holds it, the packaged one last resort."""
        for folder in reversed(self.layers):
            if (folder / name).is_file():
                return folder / name
        return self.root / name

    def system_gpu(self, system: SystemSpec) -> GpuSpec:
        """The GPU a system holds (its ``gpu`` resolved in this catalog); a dangling name is a spec error."""
        try:
            return self.gpus.get(system.gpu)
        except SpecNotFound as error:
            raise SpecInvalid(f"system {system.name}: {error}") from None

    def systems_for(self, gpu: GpuSpec) -> list[SystemSpec]:
        """Every system built from ``gpu``, its default (``default_for_gpu``) first."""
        found = [s for s in self.systems if self.system_gpu(s).name == gpu.name]
        return sorted(found, key=lambda s: not s.default_for_gpu)

    def model(self, text: str) -> ModelSpec:
        """A catalog name or alias, a config.json path (or folder holding one), a size such as ``70b``, or a Hugging
        Face Hub id (``org/name[@revision]``, read from the Hub: `catalog.hub_names` says how names are told apart)."""
        path = _local_path(text)
        if path is not None:
            return model_from_config_file(path)
        return self.named_model(text)

    def named_model(self, text: str) -> ModelSpec:
        """A catalog name or alias, a size such as ``70b``, or a Hub id; never a file (`estimator serve` reads no
        path)."""
        if _GENERIC_SIZE.match(text):
            params = parse_count(text)
            if params <= 0:
                raise SpecInvalid(f"a model needs a positive parameter count, got {text!r}")
            return ModelSpec(name=f"generic-{text.strip().lower()}", generic_params=params,
                             notes="generic dense model given by its parameter count alone")
        if "/" in text or ":" in text:  # only then may it be a Hub id (hub_names imports nothing)
            from estimator.catalog.hub_names import hub_reference

            ref = hub_reference(text)
            if ref is not None:
                return self._hub_model(ref)
        try:
            return self.models.get(text)
        except SpecNotFound:
            from estimator.catalog.suggest import model_hint

            raise SpecNotFound("model", text, self._close(text), hint=model_hint(text, self._entries())) from None

    def _entries(self) -> list[tuple[str, Mapping[str, Any]]]:
        return [(_names(data, path)[0], data) for path, data in self.models.entries]

    def _close(self, text: str) -> list[str]:
        from estimator.catalog.suggest import model_suggestions

        return model_suggestions(text, self._entries())

    def _hub_model(self, ref: HubRef) -> ModelSpec:
        """A Hub id, read from the Hub; the catalog's entry of that alias stands in when the Hub cannot answer."""
        from estimator.catalog.hub import model_from_hub

        return model_from_hub(ref, self.models.get, self._close, model_from_config)


def layered_files(folders: tuple[Path, ...], sub: str) -> list[Path]:
    """The ``*.yaml`` files of ``sub`` over ``folders``, a later folder's file replacing an earlier one's of the
    same name; sorted by name, so the order is the same whichever folder a file came from."""
    chosen: dict[str, Path] = {}
    for folder in folders:
        for path in (folder / sub).glob("*.yaml"):
            chosen[path.name] = path
    return [chosen[name] for name in sorted(chosen)]


def _local_path(text: str) -> Path | None:
    """``text`` as a local config.json or folder, when it names one (or ends in .json); None for a name."""
    try:
        path = Path(text).expanduser()
        return path if text.endswith((".json", ".gguf")) or path.is_dir() or path.is_file() else None
    except (OSError, RuntimeError, ValueError):  # too long for a path, ~nosuchuser, a NUL byte: not a file
        return None


@cache
def default_catalog() -> Catalog:
    """The packaged catalog, loaded once per process."""
    return Catalog.load()
