"""A model read from the Hugging Face Hub by its id: config.json, ``hf_quant_config.json`` when the repository has
one (NVIDIA's modelopt exports keep their format there), and every safetensors shard's header, fetched by HTTP range
request (`huggingface_hub.HfApi.parse_safetensors_file_metadata`): never the weights.

``huggingface_hub`` is imported here only, and only when a Hub id is named, so an estimate by catalog name starts
as fast as before. Its settings are read from the environment at each call, not when it was imported:
``HF_ENDPOINT`` (a mirror, or the tests' fake Hub), ``HF_TOKEN``, ``HF_HUB_OFFLINE`` and ``HF_HOME`` /
``HF_HUB_CACHE``. Files go to the Hugging Face cache; the headers, once read at a commit, to the estimator's cache
folder (``ESTIMATOR_CACHE_DIR``), so a second run needs no network, and ``HF_HUB_OFFLINE=1`` answers from the cache
or says in one line that the model is not cached.

``get_safetensors_metadata`` would fetch the index and the headers in one call, but it writes the index to the
cache folder huggingface_hub read when imported and draws a progress bar; the same range requests are made here
one shard at a time, pinned to the commit config.json came from.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from estimator.catalog.checkpoint_files import COMPUTE_DTYPE, StoredTensor, StoredWeights, stored_tensor, summarize
from estimator.catalog.files import MAX_CONFIG_BYTES, MAX_INDEX_BYTES, read_json
from estimator.catalog.hub_names import HubRef
from estimator.catalog.hub_words import HubUnavailable, NoConfig, NotCached, unavailable
from estimator.catalog.parse_cache import cache_folder
from estimator.errors import SpecInvalid, SpecNotFound

if TYPE_CHECKING:
    from estimator.catalog.architecture import ModelSpec

DEFAULT_ENDPOINT = "https://huggingface.co"
TIMEOUT_S = 5.0  # per request: an unreachable Hub is said in seconds (huggingface_hub's own default is 10)
PARALLEL = 8  # shard headers fetched at once (DeepSeek-V3 has 163 shards)
_CACHE_FORMAT = 1
_COMMIT = re.compile(r"[0-9a-f]{40}")
# one Hub read at a time (`estimator serve` answers requests on threads): the progress-bar and logging settings
# `_quiet` sets and restores are huggingface_hub's global ones, and two reads of one repository fetch it once
_READING = threading.Lock()
_TRUE = {"1", "on", "yes", "true"}  # huggingface_hub's reading of a boolean variable (constants._is_true)


@dataclass(frozen=True)
class Settings:
    """The Hub's settings as the environment gives them now."""

    endpoint: str
    cache_dir: str
    token: str | None
    offline: bool
    timeout: float


def settings() -> Settings:
    """The environment's Hub settings, read as huggingface_hub reads them (its ``constants`` module)."""
    env = os.environ
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                                              "huggingface")
    timeout = env.get("HF_HUB_ETAG_TIMEOUT", "")
    offline = env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE") or ""
    return Settings(endpoint=(env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/"),
                    cache_dir=env.get("HF_HUB_CACHE") or os.path.join(home, "hub"),
                    token=env.get("HF_TOKEN") or None,
                    offline=offline.strip().lower() in _TRUE,
                    timeout=float(timeout) if timeout.replace(".", "", 1).isdigit() else TIMEOUT_S)


@dataclass(frozen=True)
class HubModel:
    """What the Hub holds for a model: its config, its hf_quant_config.json (None: none), its weights as the shard
    headers give them (None: no safetensors files) and where it was read (``hub:org/name@<commit>``)."""

    config: Any
    quant_file: Mapping[str, Any] | None
    stored: StoredWeights | None
    source: str


def model_from_hub(ref: HubRef, catalog_model: Callable[[str], ModelSpec], close: Callable[[str], list[str]],
                   build: Callable[..., ModelSpec]) -> ModelSpec:
    """The model ``ref`` names, read from the Hub and built by ``build`` (`registry.model_from_config`): its name the
    Hub id, its ``origin`` the commit. When the Hub cannot answer, the catalog's entry of that alias
    (``catalog_model``) stands in, its ``origin`` saying why, unless the name asks for the Hub alone; else one line,
    with the catalog's ``close`` names where the id may be misspelled."""
    try:
        got = read_hub(ref)
    except HubUnavailable as error:
        try:
            known = None if ref.pinned else catalog_model(ref.repo)
        except SpecNotFound:
            known = None
        if known is not None:
            return known.model_copy(update={"origin": f"the catalog's {known.name} (the Hub was not read: "
                                                      f"{error.reason})"})
        names = close(ref.repo) if error.kind in ("missing", "network", "not-cached") else []
        if not names:
            raise
        listed = ", ".join(repr(n) for n in names)
        raise HubUnavailable(ref.label, error.kind, f"{error.reason}; did you mean {listed}?") from None
    spec = build(got.config, source=got.source, default_name=ref.repo, stored=got.stored, hf_quant=got.quant_file)
    return spec.model_copy(update={"name": ref.repo, "origin": got.source})


def read_hub(ref: HubRef) -> HubModel:
    """The model ``ref`` names, from the Hub or the caches; a failure is one `HubUnavailable` line."""
    s = settings()
    try:
        import huggingface_hub as hub
    except ImportError:  # a core dependency: missing only from a broken install
        from estimator.errors import MissingDependency

        raise MissingDependency("a Hub id needs huggingface_hub: pip install 'llm-estimator'") from None
    with _READING, _quiet():
        try:
            config_file = _config(hub, ref, s)
            commit = config_file.parent.name  # the cache's snapshots/<commit>/config.json
            config = read_json(config_file, MAX_CONFIG_BYTES, "config.json")
            found = _load(ref.repo, commit)
            if found is None:
                if s.offline:
                    raise NotCached(commit)
                found = _fetch(hub, ref.repo, commit, s)
                _save(ref.repo, commit, found)
        except Exception as error:
            raise unavailable(error, ref, s.endpoint, s.offline, _describe(hub)) from None
    files = found["files"]
    stored = _stored(files) if files else None
    return HubModel(config, found["quant"], stored, f"hub:{ref.repo}@{commit}")


def _config(hub: Any, ref: HubRef, s: Settings) -> Path:
    """config.json at the revision asked for, in the Hugging Face cache (which records the commit a branch or tag
    is at, for offline runs). Online, one HEAD request first, without retries (huggingface_hub's download retries
    a failed one for about 20 s): an unreachable Hub is said at once, unless a cached copy answers, so a second
    run needs no network."""
    revision = ref.revision or "main"
    if _COMMIT.fullmatch(revision):  # a commit never changes: once cached, no request
        cached = hub.try_to_load_from_cache(ref.repo, "config.json", cache_dir=s.cache_dir, revision=revision)
        if isinstance(cached, str):
            return Path(cached)
    if not s.offline:
        url = hub.hf_hub_url(ref.repo, "config.json", revision=revision, endpoint=s.endpoint)
        try:
            hub.get_hf_file_metadata(url, token=s.token, timeout=s.timeout, endpoint=s.endpoint)
        except hub.errors.RemoteEntryNotFoundError:
            raise NoConfig(ref.label) from None
        except (hub.errors.RepositoryNotFoundError, hub.errors.RevisionNotFoundError):
            raise
        except Exception:  # the network or the Hub's own failure: a cached copy answers
            cached = hub.try_to_load_from_cache(ref.repo, "config.json", cache_dir=s.cache_dir, revision=revision)
            if isinstance(cached, str):
                return Path(cached)
            raise
    return Path(_download(hub, ref.repo, "config.json", revision, s))


def _describe(hub: Any) -> Callable[[BaseException], str | None]:
    """The kind of a huggingface_hub failure (`hub_words.unavailable` words it)."""
    errors = hub.errors

    def kind(error: BaseException) -> str | None:
        kinds: tuple[tuple[str, Any], ...] = (
            ("not-cached", errors.OfflineModeIsEnabled), ("gated", errors.GatedRepoError),
            ("revision", errors.RevisionNotFoundError), ("missing", errors.RepositoryNotFoundError),
            ("local", errors.LocalEntryNotFoundError),
            ("http", errors.HfHubHTTPError))
        return next((name for name, kinds_of in kinds if isinstance(error, kinds_of)), None)

    return kind


@contextmanager
def _quiet() -> Iterator[None]:
    """No progress bars or log lines on the terminal while the Hub is read (a report or one error line is all that
    is said)."""
    import logging

    from huggingface_hub.utils import logging as hub_logging
    from huggingface_hub.utils.tqdm import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    was, verbosity = are_progress_bars_disabled(), hub_logging.get_verbosity()
    disable_progress_bars()
    hub_logging.set_verbosity(logging.ERROR)  # its retry and cache warnings: the one error line says what failed
    try:
        yield
    finally:
        hub_logging.set_verbosity(verbosity)
        if not was:
            enable_progress_bars()


def _download(hub: Any, repo: str, filename: str, revision: str, s: Settings) -> str:
    return str(hub.hf_hub_download(repo, filename, revision=revision, cache_dir=s.cache_dir, endpoint=s.endpoint,
                                   token=s.token, etag_timeout=s.timeout, local_files_only=s.offline))


def _optional(hub: Any, repo: str, filename: str, commit: str, s: Settings, limit: int) -> Any:
    """A JSON file of the repository at ``commit``, or None when it has none."""
    try:
        path = _download(hub, repo, filename, commit, s)
    except hub.errors.RemoteEntryNotFoundError:
        return None
    return read_json(Path(path), limit, filename)


def _fetch(hub: Any, repo: str, commit: str, s: Settings) -> dict[str, Any]:
    """hf_quant_config.json and every shard's header at ``commit``: {"quant": …, "files": {file: header}}."""
    quant = _optional(hub, repo, "hf_quant_config.json", commit, s, MAX_CONFIG_BYTES)
    index = _optional(hub, repo, "model.safetensors.index.json", commit, s, MAX_INDEX_BYTES)
    api = hub.HfApi(endpoint=s.endpoint, token=s.token)

    def header(name: str) -> dict[str, Any]:
        meta = api.parse_safetensors_file_metadata(repo, name, revision=commit, timeout=s.timeout)
        return {t: [i.dtype, list(i.shape), list(i.data_offsets)] for t, i in meta.tensors.items()}

    if index is None:
        try:
            files = {"model.safetensors": header("model.safetensors")}
        except hub.errors.RemoteEntryNotFoundError:
            files = {}
    else:
        weight_map = index.get("weight_map") if isinstance(index, Mapping) else None
        if not isinstance(weight_map, Mapping):
            raise SpecInvalid(f"{repo}: model.safetensors.index.json has no weight_map")
        names = sorted({str(n) for n in weight_map.values()})
        with ThreadPoolExecutor(min(PARALLEL, max(1, len(names)))) as pool:
            files = dict(zip(names, pool.map(header, names), strict=True))
    return {"quant": quant if isinstance(quant, Mapping) else None, "files": files}


def _stored(files: Mapping[str, Mapping[str, Any]]) -> StoredWeights:
    """The shards' tensors as the local reader (`checkpoint_files`) sums them."""
    tensors = [_tensor(file, name, entry) for file, header in files.items() for name, entry in header.items()]
    return summarize("safetensors", len(files), tensors, COMPUTE_DTYPE, "bf16")


def _tensor(file: str, name: str, entry: Any) -> StoredTensor:
    try:
        dtype, shape, offsets = entry
    except (TypeError, ValueError):
        raise SpecInvalid(f"{file}: tensor {name!r} has a malformed header entry") from None
    return stored_tensor(file, name, dtype, shape, offsets)


def _cache_file(repo: str, commit: str) -> Path | None:
    folder = cache_folder()
    safe = commit if commit.isalnum() else None  # a commit hash; anything else is not cached
    return None if folder is None or safe is None else folder / "hub" / repo.replace("/", "--") / f"{safe}.json"


def _load(repo: str, commit: str) -> dict[str, Any] | None:
    """The headers read before at ``commit`` (a commit never changes), or None."""
    file = _cache_file(repo, commit)
    if file is None or not file.is_file():
        return None
    try:
        data = read_json(file, MAX_INDEX_BYTES, "Hub header cache")
    except SpecInvalid:
        return None
    ok = isinstance(data, dict) and data.get("format") == _CACHE_FORMAT and isinstance(data.get("files"), dict)
    return data if ok else None


def _save(repo: str, commit: str, found: dict[str, Any]) -> None:
    file = _cache_file(repo, commit)
    if file is None:
        return
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=file.parent, prefix=".hub.", suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({"format": _CACHE_FORMAT, **found}, out, separators=(",", ":"))
        os.replace(temporary, file)
    except OSError:
        return  # a read-only or full cache folder: the next run reads the headers again
