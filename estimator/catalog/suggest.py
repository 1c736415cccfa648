"""Suggestions for a model name the catalog does not hold: the same family and size first, then close spellings.

A name such as ``qwen3-33b`` says its family (``qwen3``: what comes before the size), its size (33 billion) and
whether it is a mixture of experts (an active count, ``-a3b``, or ``8x7b``). Close spelling alone (difflib) ranks
``qwen3-30b-a3b`` above ``qwen3-32b`` for it and ``gpt2`` beside ``gpt-oss-120b``; this ranks catalog models by
family first (the same, then a related one such as ``qwen3.5`` or ``llama-3.1`` for ``llama-3``), then by size
(the ratio, with a dense model preferred for a dense name and an MoE for an MoE name), and only then by spelling.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from estimator.errors import ECHO_MAX

# "32b", "0.6b", "8x7b" (experts × size), not "a3b" (an MoE's active count) nor "v0.1"
_SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)(?:x(\d+(?:\.\d+)?))?b(?![a-z])")
_MOE_NAME = re.compile(r"\d+x\d|(?<![a-z0-9])a\d+(?:\.\d+)?b(?![a-z])")
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
_KIND_PENALTY = 1.0  # a model of the other kind (dense vs MoE) ranks as if e ≈ 2.7 × further in size
_SPELLING_CUTOFF = 0.5  # as the other catalogs' suggestions (difflib's ratio), for names of no related family


@dataclass(frozen=True)
class NameParts:
    """What a model name says: its family key, its size in billions (None: no size in it), whether it is MoE."""

    family: str
    billions: float | None
    moe: bool


def _key(text: str) -> str:
    return re.sub(r"[\s\-_./:]", "", text.lower())


def name_parts(name: str) -> NameParts:
    """``qwen3-30b-a3b`` → (qwen3, 30.0, MoE); ``mixtral-8x7b`` → (mixtral, 56.0, MoE); ``gpt2`` → (gpt2, None)."""
    text = name.lower().rsplit("/", 1)[-1]  # a Hugging Face id: its repository name
    match = _SIZE.search(text)
    if match is None:
        return NameParts(_key(text), None, bool(_MOE_NAME.search(text)))
    size = float(match.group(1)) * (float(match.group(2)) if match.group(2) else 1.0)
    return NameParts(_key(text[:match.start()]) or _key(text), size, bool(_MOE_NAME.search(text)))


def _is_moe(data: Mapping[str, Any]) -> bool:
    config = data.get("config")
    if not isinstance(config, Mapping):
        return False
    for part in (config, config.get("text_config")):
        if isinstance(part, Mapping) and any(isinstance(part.get(k), int) and part[k] > 1 for k in _EXPERT_KEYS):
            return True
    return False


def _tier(wanted: str, family: str) -> int:
    """0: the same family; 1: one family's key starts the other's (llama3 and llama31, qwen3 and qwen35); 2: none."""
    if wanted == family:
        return 0
    return 1 if wanted and family and (family.startswith(wanted) or wanted.startswith(family)) else 2


def model_suggestions(name: str, models: Iterable[tuple[str, Mapping[str, Any]]], count: int = 3) -> list[str]:
    """Up to ``count`` catalog names (``models``: each canonical name with its spec mapping) for ``name``."""
    wanted = name_parts(name)
    ranked = []
    for canonical, data in models:
        parts = name_parts(canonical)
        moe = parts.moe or _is_moe(data)
        tier = _tier(wanted.family, parts.family)
        spelling = difflib.SequenceMatcher(None, _key(name), _key(canonical)).ratio()
        if tier == 2 and spelling < _SPELLING_CUTOFF:
            continue
        if wanted.billions is None:
            distance = 0.0
        elif parts.billions is None:
            distance = math.inf
        else:
            distance = abs(math.log(parts.billions / wanted.billions)) if parts.billions and wanted.billions else 9.0
            distance += _KIND_PENALTY if moe != wanted.moe else 0.0
        ranked.append(((tier, distance if tier < 2 else 0.0, -spelling), canonical))
    return [canonical for _, canonical in sorted(ranked)[:count]]


# A Hugging Face address as a browser shows it: https://huggingface.co/org/name (or hf.co; a /tree/main, /blob/...
# tail after the id)
_HF_ADDRESS = re.compile(r"(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/(?:models/)?([^/\s?#]+/[^/\s?#]+)",
                         re.IGNORECASE)


def hub_id(name: str) -> str | None:
    """The Hugging Face id ``org/name`` a model name gives (an id itself, or an address of the hub), else None."""
    address = _HF_ADDRESS.match(name)
    if address is not None:
        return address.group(1)
    if "://" in name or name.count("/") != 1:
        return None
    return name


def model_hint(name: str) -> str:
    """How to give a model the catalog lacks: its config.json (for a name the Hub would not take as an id, such as
    one with a space: where to download it, the address written once), or its size alone."""
    size = f"--model {'32b' if (billions := name_parts(name).billions) is None else f'{billions:g}b'}"
    repo = hub_id(name)
    if repo is None:
        return f"give its config.json (--model path/to/config.json) or its size alone ({size}: a dense model of " \
               "that many parameters)"
    # the address in full or not at all: a cut one leads nowhere, and an id over the echo limit would pass it
    where = f", https://huggingface.co/{repo}/blob/main/config.json," if len(repo) <= ECHO_MAX else " from the hub"
    return f"download its config.json{where} and pass --model FILE (or its folder), or give its size alone ({size})"


def closest_names(wanted: str, names: Iterable[str], count: int = 5) -> list[str]:
    """The ``count`` of ``names`` closest in spelling to ``wanted`` (difflib's ratio), closest first: what a
    one-line error lists in place of a long list."""
    return difflib.get_close_matches(wanted, list(names), n=count, cutoff=0.0)
