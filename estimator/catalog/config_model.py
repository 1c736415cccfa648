"""A model from a Hugging Face config.json: a local file, a folder that holds one with its safetensors files (read
from their headers), a ``.gguf`` file, or a config already parsed (one sent to `estimator serve`, one read from the
Hub) — with the format its checkpoint stores its weights in."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from estimator.catalog.architecture import Architecture, ModelSpec
from estimator.catalog.checkpoint_files import StoredWeights, hf_quant_config, stored_safetensors
from estimator.catalog.checkpoint_quant import CheckpointQuant, read_hf_quant_config, read_quantization
from estimator.catalog.files import MAX_CONFIG_BYTES, read_json
from estimator.errors import SpecInvalid

__all__ = ["checkpoint_of", "model_from_config", "model_from_config_file", "uncounted_towers"]


# A multimodal wrapper's non-text towers: those no tower reader (catalog/towers.py) counts, the report names.
_TOWER_KEYS = ("vision_config", "audio_config", "speech_config", "vision_tower_config")


def uncounted_towers(config: Mapping[str, Any], arch: Architecture) -> tuple[str, ...]:
    """A wrapper's tower configs that no tower reader counted (the report warns of each)."""
    return tuple(k for k in _TOWER_KEYS if isinstance(config.get(k), Mapping) and k not in arch.towers_read)


def checkpoint_of(config: Any, hf_quant: Any = None) -> tuple[CheckpointQuant | None, str | None]:
    """The config's quantization_config (a multimodal wrapper's may sit in its text_config), else a ModelOpt
    folder's hf_quant_config.json, read; or why it could not be (the estimate then needs --dtype)."""
    q = config.get("quantization_config") if isinstance(config, Mapping) else None
    text = config.get("text_config") if isinstance(config, Mapping) else None
    if q is None and isinstance(text, Mapping):
        q = text.get("quantization_config")
    try:
        if isinstance(q, Mapping):
            return read_quantization(q), None
        if isinstance(hf_quant, Mapping):
            return read_hf_quant_config(hf_quant), None
    except SpecInvalid as error:
        return None, str(error)
    return None, None


def _read_config(file: Path) -> Any:
    return read_json(file, MAX_CONFIG_BYTES, "config.json")


_HUB_CACHE = re.compile(r"^models--([^/]+?)--(.+)$")  # huggingface_hub's cache: models--org--name/snapshots/<rev>
_REVISION = re.compile(r"^[0-9a-f]{40}$")


def _hub_name(value: Any) -> str | None:
    """A config's ``_name_or_path`` as a name: a hub id as it is; a local path by its last folder."""
    if not isinstance(value, str) or not value.strip():
        return None
    return Path(value).name if value.startswith(("/", ".", "~")) or "\\" in value else value


def _folder_name(file: Path, config: Any) -> str:
    """The name of a model whose config has no ``_name_or_path``: a Hugging Face cache folder gives its hub id
    (``models--Qwen--Qwen3-8B/snapshots/<rev>`` → ``Qwen/Qwen3-8B``); a folder named by a bare revision hash, its
    architectures entry; any other folder its own name; a file other than config.json its stem."""
    if file.name != "config.json":
        return file.stem
    folder = file.resolve().parent
    for part in reversed(folder.parts):
        hub = _HUB_CACHE.match(part)
        if hub:
            return f"{hub[1]}/{hub[2]}"
    architectures = config.get("architectures") if isinstance(config, Mapping) else None
    if _REVISION.match(folder.name) and isinstance(architectures, list) and architectures:
        return str(architectures[0])
    return folder.name or file.stem


def _config_and_weights(path: Path) -> tuple[Path, Any, StoredWeights | None, Any]:
    """The config file, its contents, the weights the checkpoint's own file headers give (when it has them) and
    its hf_quant_config.json (when it has one): a ``.gguf`` file; or a folder with config.json and safetensors
    files."""
    try:
        if path.suffix == ".gguf" and path.is_file():
            from estimator.catalog.gguf_file import read_gguf

            config, stored = read_gguf(path)
            return path, config, stored, None
        file = path / "config.json" if path.is_dir() else path
        found = file.is_file()
        if not found:
            raise SpecInvalid(f"config file not found: {file}")
        config = _read_config(file)
        folder = path if path.is_dir() else None
        quant = hf_quant_config(folder) if folder is not None else None
        return file, config, stored_safetensors(folder) if folder is not None else None, quant
    except OSError as error:
        raise SpecInvalid(f"not a readable config.json path: {error.strerror or error}") from None


def model_from_config_file(path: Path) -> ModelSpec:
    """A model from a local Hugging Face config.json, a folder that holds one (and its safetensors files, read
    from their headers), or a ``.gguf`` file."""
    file, config, stored, hf_quant = _config_and_weights(path)
    default = _folder_name(file, config)
    return model_from_config(config, source=str(file), default_name=default or file.stem, stored=stored,
                             hf_quant=hf_quant)


def model_from_config(config: Any, *, source: str, default_name: str,
                      stored: StoredWeights | None = None, hf_quant: Any = None) -> ModelSpec:
    """A model from a Hugging Face config.json already parsed (a file's, or one sent to `estimator serve`);
    ``source`` names it in errors and in the model's sources; ``stored``: its files' weights, when read;
    ``hf_quant``: its hf_quant_config.json, parsed, when it has one."""
    from estimator.catalog.hf_config import architecture_from_config

    checkpoint, checkpoint_error = checkpoint_of(config, hf_quant)
    try:
        arch = architecture_from_config(config)
    except SpecInvalid as error:
        raise SpecInvalid(f"{source}: {error}") from None
    name = _hub_name(config.get("_name_or_path")) or default_name
    towers = uncounted_towers(config, arch)
    return ModelSpec(name=str(name) or default_name, arch=arch, sources=(source,), checkpoint=checkpoint,
                     checkpoint_error=checkpoint_error, stored=stored, uncounted_towers=towers)
