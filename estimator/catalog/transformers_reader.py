"""Read a config.json no family file covers by building its model with Hugging Face transformers on the ``meta``
device: no weights, no network, no memory for tensors.

The tensors come from the model's own parameters (`estimator.catalog.meta_tensors`), so the parameter count is
``sum(p.numel() for p in model.parameters())`` exactly, tied weights once. The layer kinds, attention widths,
sliding windows, experts and recurrent mixers come from its modules and from the cache layers transformers would
build for it (`estimator.catalog.meta_layers`); they decide the KV cache, the recurrent state and the times. What
the architecture model cannot hold is said in ``read_notes``, never guessed: a tensor in no role (counted as
``other``), a recurrent mixer whose state has no formula here, a top-k the modules and config do not state.

torch and transformers are imported only on this path (the ``transformers`` extra). The model is built from the
config dict (``AutoConfig.for_model``: transformers' own classes, never a checkpoint's remote code), and the derived
architecture is cached as JSON in the estimator's cache folder, keyed by the config, the transformers and torch
versions and this reader's source, so a 100-billion-parameter model is built once.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
import warnings
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from estimator.catalog.architecture import MAX_LAYERS, MAX_WIDTH, Architecture
from estimator.catalog.meta_arch import architecture_of
from estimator.errors import SpecInvalid, echoed

EXTRA_HINT = "pip install 'llm-estimator[transformers]'"
# metadata some configs carry that is no configuration field (as tools/hf_param_count.py); the count is the
# architecture's, whatever a quantization_config says
_IGNORED = frozenset({"model_type", "transformers_version", "_name_or_path", "auto_map", "quantization_config"})
# fields of the whole model, not of its language model: a wrapper's own word on them stands
_WHOLE_MODEL = frozenset({"architectures", "dtype", "torch_dtype", "tie_word_embeddings", "use_cache", "bos_token_id",
                          "eos_token_id", "pad_token_id", "initializer_range", "image_token_id", "video_token_id"})
_AUTO_CLASSES = ("AutoModelForCausalLM", "AutoModelForImageTextToText", "AutoModelForSeq2SeqLM", "AutoModel")
_SOURCES = ("transformers_reader.py", "meta_arch.py", "meta_layers.py", "meta_tensors.py", "architecture.py")


def transformers_installed() -> bool:
    """Whether torch and transformers can be imported (found without importing them)."""
    return importlib.util.find_spec("transformers") is not None and importlib.util.find_spec("torch") is not None


def read_with_transformers(config: Mapping[str, Any], unsupported: str) -> Architecture:
    """The architecture of ``config`` as transformers builds it; ``unsupported`` is the refusal's first part
    (no family file reads this model_type), completed by what would read it."""
    model_type = str(config.get("model_type"))
    if not transformers_installed():
        raise SpecInvalid(f"{unsupported}; transformers may read it: {EXTRA_HINT}")
    version = metadata.version("transformers")
    key = _cache_key(config, version)
    cached = _cached(key)
    if cached is not None:
        return cached
    arch = _read(config, model_type, version, unsupported)
    _store(key, arch)
    return arch


def _read(config: Mapping[str, Any], model_type: str, version: str, unsupported: str) -> Architecture:
    import logging

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's and transformers' own deprecations are not the user's concern
        import torch
        import transformers

    if model_type not in transformers.CONFIG_MAPPING:
        inner = _known_text_config(config, transformers.CONFIG_MAPPING)
        if inner is None:
            raise SpecInvalid(f"{unsupported}; transformers {version} does not know it either")
        return _read(inner, str(inner["model_type"]), version, unsupported)  # its towers: said uncounted
    fields = {k: v for k, v in config.items() if k not in _IGNORED}
    _refuse_too_many(fields)
    log = logging.getLogger("transformers")
    level = log.level
    log.setLevel(logging.ERROR)  # its notes on odd token ids and defaults are not the user's concern here
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            built = transformers.AutoConfig.for_model(model_type, **fields)
            _refuse_unread_fields(fields, built, model_type)
            with torch.device("meta"):
                model = _instantiate(transformers, built, towers="vision_config" in fields)
    except SpecInvalid:
        raise
    except Exception as error:  # transformers' own refusal of this config, in its words
        detail = echoed(f"{type(error).__name__}: {error}".replace("\n", " "))
        raise SpecInvalid(f"transformers {version} could not build {model_type} from this config.json: "
                          f"{detail}") from None
    finally:
        log.setLevel(level)
    return architecture_of(model, built, model_type, f"transformers {version}")


def _refuse_too_many(fields: Mapping[str, Any]) -> None:
    """Layer and expert counts past `MAX_LAYERS` are refused before anything is built: each would be a module
    (a config sent to `estimator serve` is anyone's), and no published model comes near (126 layers, 512 experts)."""
    for key, value in fields.items():
        if isinstance(value, Mapping):
            _refuse_too_many(value)
        elif key.endswith(("layers", "layer", "experts")) and isinstance(value, int) and value > MAX_LAYERS:
            raise SpecInvalid(f"config.json field {echoed(key)!r} is {value:,}: more than the {MAX_LAYERS:,} a "
                              "model is read with")


def _refuse_unread_fields(fields: Mapping[str, Any], built: Any, model_type: str) -> None:
    """A wrapper's config class keeps its language model's fields in a nested text config: where this config.json
    states them at the top level instead, transformers builds the text model from its defaults. Refused, naming
    the fields, rather than read as the defaults."""
    text = built.get_text_config(decoder=True)
    if text is built:
        return
    lost = sorted(k for k, v in fields.items() if k not in _WHOLE_MODEL and not isinstance(v, Mapping)
                  and hasattr(text, k) and _plain(getattr(text, k)) != _plain(v))
    if lost:
        shown = ", ".join(lost[:6]) + (f" and {len(lost) - 6} more" if len(lost) > 6 else "")
        raise SpecInvalid(f"transformers' {model_type} config reads its language model from text_config; this "
                          f"config.json states {shown} at the top level, where transformers would ignore them "
                          "(nest them under text_config)")


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, list | tuple) else value


def _known_text_config(config: Mapping[str, Any], known: Any) -> Mapping[str, Any] | None:
    """A wrapper transformers does not know: its nested language model's config, where transformers knows that."""
    for key in ("text_config", "language_config", "llm_config"):
        inner = config.get(key)
        if isinstance(inner, Mapping) and isinstance(inner.get("model_type"), str) and inner["model_type"] in known:
            return inner
    return None


def _instantiate(transformers: Any, config: Any, *, towers: bool) -> Any:
    """A causal LM where transformers has one for this config, else an image-text-to-text model (a multimodal
    wrapper with its towers and LM head; tried first where the config.json has a ``vision_config``), else a
    sequence-to-sequence LM (an encoder-decoder with its LM head), else the bare model (an encoder)."""
    names: tuple[str, ...] = _AUTO_CLASSES
    if towers:  # the whole wrapper: a causal LM class builds its text model alone (Qwen3_5Config, MllamaConfig)
        names = ("AutoModelForImageTextToText", *names)
    for name in names:
        auto = getattr(transformers, name, None)
        if auto is not None and type(config) in auto._model_mapping:
            return auto.from_config(config)
    raise SpecInvalid(f"transformers has no model class for {config.model_type}")


def _cache_key(config: Mapping[str, Any], version: str) -> str:
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
    digest.update(f"\0{version}\0{metadata.version('torch')}\0{MAX_WIDTH}".encode())
    here = Path(__file__).resolve().parent
    for name in _SOURCES:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()


def _cache_file(key: str) -> Path | None:
    from estimator.catalog.parse_cache import cache_folder

    folder = cache_folder()
    return None if folder is None else folder / "transformers-read" / f"{key[:40]}.json"


def _cached(key: str) -> Architecture | None:
    """The architecture read before for this key; None when absent or unreadable (then it is built again)."""
    file = _cache_file(key)
    if file is None:
        return None
    try:
        return Architecture.model_validate_json(file.read_bytes())
    except (OSError, ValueError):
        return None


def _store(key: str, arch: Architecture) -> None:
    """Write atomically; a folder that cannot be written only means building again next time."""
    file = _cache_file(key)
    if file is None:
        return
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=file.parent, prefix=".read.", suffix=".tmp")
        with os.fdopen(handle, "w") as out:
            out.write(arch.model_dump_json())
        os.replace(temporary, file)
    except OSError:
        return
