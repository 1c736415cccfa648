"""Suggestions for a model name the catalog does not hold: the same family and size first, then its kin.

A name such as ``qwen3-33b`` says its family (``qwen3``: what comes before the size), its size (33 billion) and
whether it is a mixture of experts (an active count, ``-a3b``, or ``8x7b``). Close spelling alone (difflib) ranks
``qwen3-30b-a3b`` above ``qwen3-32b`` for it, ``gpt2`` beside ``gpt-oss-120b`` and ``qwen3-4b`` for ``yi-34b``; this
offers only models of the name's family or its kin (the name's family key starts the other's, as ``llama-3.1``
for ``llama-3``; both begin with the same word, as ``mistral-nemo`` for ``mistral-small``; or the family is misspelt),
ranked by size (the ratio; a kin family's model as if twice as far, so ``qwen3-32b`` comes before ``qwen3.5-27b``
for ``qwen3-33b`` but ``yi-1.5-9b`` before ``yi-34b`` for ``yi-9b``; a dense model preferred for a dense name and
an MoE for an MoE name), and only then by spelling. A model of no kin is never offered as if it were one.

A distill (``DeepSeek-R1-Distill-Qwen-32B``) is its base model's architecture, fine-tuned on the teacher's samples:
its kin is the base family (``qwen``), never the teacher (``deepseek-r1``, 671 B). A name whose family has no kin in
the catalog gets no "did you mean"; the hint says so and, where the name carries a size, lists models of other
families of about that size, labelled as such.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from estimator.errors import ECHO_MAX, echoed

# "32b", "0.6b", "8x7b" (experts × size), not "a3b" (an MoE's active count) nor "v0.1"
_SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)(?:x(\d+(?:\.\d+)?))?b(?![a-z])")
_MOE_NAME = re.compile(r"\d+x\d|(?<![a-z0-9])a\d+(?:\.\d+)?b(?![a-z])")
# "<teacher>-distill-<base>": what follows the word is the base model the distill is built on ("distil" misspelt too)
_DISTILL = re.compile(r"[\s\-_.]distil+(?:ed)?(?:[\s\-_.]|$)")
_WORDS = re.compile(r"[\s\-_./:]+")
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
_KIND_PENALTY = 1.0  # a model of the other kind (dense vs MoE) ranks as if e ≈ 2.7 × further in size
_KIN_PENALTY = math.log(2)  # a kin family's model ranks as if twice as far in size as one of the name's own family
_TYPO_RATIO = 0.8  # family keys this close in spelling (difflib's ratio) are one family misspelt: qwne3 for qwen3
_OTHER_FAMILY_SPAN = math.log(1.5)  # "about that size" for another family's model: within a factor of 1.5
ModelEntries = Sequence[tuple[str, Mapping[str, Any]]]


@dataclass(frozen=True)
class NameParts:
    """What a model name says: its family key, its size in billions (None: no size in it), whether it is MoE; the
    family its architecture comes from (``kin``: a distill's base family, else the family itself) and that family's
    first word (``lineage``: ``mistral`` for ``mistral-small``); ``label``, the family as it was written; a
    distill's ``teacher`` (``deepseekr1``; empty for a name that is not a distill)."""

    family: str
    billions: float | None
    moe: bool
    kin: str
    lineage: str
    label: str
    teacher: str


def _key(text: str) -> str:
    return re.sub(r"[\s\-_./:]", "", text.lower())


def name_parts(name: str) -> NameParts:
    """``qwen3-30b-a3b`` → (qwen3, 30.0, MoE); ``mixtral-8x7b`` → (mixtral, 56.0, MoE); ``gpt2`` → (gpt2, None);
    ``deepseek-r1-distill-qwen-32b`` → (deepseekr1distillqwen, 32.0, kin qwen)."""
    text = name.lower().rsplit("/", 1)[-1]  # a Hugging Face id: its repository name
    match = _SIZE.search(text)
    size = None if match is None else float(match.group(1)) * (float(match.group(2)) if match.group(2) else 1.0)
    head = text if match is None else text[:match.start()]
    family = _key(head) or _key(text)
    distill = _DISTILL.search(head)
    based = distill is not None and bool(_key(head[distill.end():]))
    kin_text = head[distill.end():] if distill is not None and based else head
    words = [w for w in _WORDS.split(kin_text) if w]
    return NameParts(family, size, bool(_MOE_NAME.search(text)), _key(kin_text) or family,
                     _key(words[0]) if words else family, head.strip(" -_./:") or text,
                     _key(head[:distill.start()]) if distill is not None and based else "")


def _is_moe(data: Mapping[str, Any]) -> bool:
    config = data.get("config")
    if not isinstance(config, Mapping):
        return False
    for part in (config, config.get("text_config")):
        if isinstance(part, Mapping) and any(isinstance(part.get(k), int) and part[k] > 1 for k in _EXPERT_KEYS):
            return True
    return False


def _kin(wanted: NameParts, parts: NameParts) -> bool:
    """Kin of the wanted family: a catalog family its key starts (llama3 → llama31; a distill's qwen → qwen3), the
    same first word (mistral), a misspelling (qwne3 for qwen3), or a catalog distill of it (deepseek-r1-8b, as Ollama
    names R1's distills, → deepseek-r1-distill-llama-8b). A distill's teacher is no kin of it (its kin key is its base
    family), and a catalog distill is no kin of a versioned family (qwen3 does not start with qwen)."""
    a, b = wanted.kin, parts.kin
    if parts.teacher and parts.teacher == wanted.family:
        return True
    if len(a) < 2 or len(b) < 2:
        return False
    if b.startswith(a) or wanted.lineage == parts.lineage:
        return True
    if a.startswith(b):  # the catalog's key is a shorter one: a vaguer family, not a misspelling
        return False
    return difflib.SequenceMatcher(None, a, b).ratio() >= _TYPO_RATIO


def _billions(parts: NameParts, data: Mapping[str, Any]) -> float | None:
    """A catalog model's size: the one its name says, else its recorded parameter count (``deepseek-r1``: 671)."""
    if parts.billions is not None:
        return parts.billions
    count = data.get("hf_params")
    return count / 1e9 if isinstance(count, int) and count > 0 else None


def _distance(wanted: NameParts, billions: float | None, moe: bool) -> float:
    """How far a catalog model's size is from the name's: |log ratio|, plus a penalty for the other kind."""
    if wanted.billions is None:
        return 0.0
    if billions is None or billions <= 0 or wanted.billions <= 0:
        return math.inf
    return abs(math.log(billions / wanted.billions)) + (_KIND_PENALTY if moe != wanted.moe else 0.0)


def model_suggestions(name: str, models: ModelEntries, count: int = 3) -> list[str]:
    """Up to ``count`` catalog names (``models``: each canonical name with its spec mapping) of ``name``'s family or
    its kin, nearest first; none where the catalog holds no kin of it."""
    wanted = name_parts(name)
    ranked = []
    for canonical, data in models:
        parts = name_parts(canonical)
        if parts.family == wanted.family:
            distance = _distance(wanted, _billions(parts, data), parts.moe or _is_moe(data))
        elif _kin(wanted, parts):
            distance = _distance(wanted, _billions(parts, data), parts.moe or _is_moe(data)) + _KIN_PENALTY
        else:
            continue
        spelling = difflib.SequenceMatcher(None, _key(name), _key(canonical)).ratio()
        ranked.append(((distance, -spelling), canonical))
    return [canonical for _, canonical in sorted(ranked)[:count]]


def other_families(name: str, models: ModelEntries, count: int = 3) -> list[str]:
    """Up to ``count`` catalog models of about the size ``name`` carries (within a factor of 1.5), nearest first:
    what a name of a family the catalog lacks is offered, labelled as other families. None without a size."""
    wanted = name_parts(name)
    if wanted.billions is None or wanted.billions <= 0:
        return []
    ranked = []
    for canonical, data in models:
        parts = name_parts(canonical)
        billions = _billions(parts, data)
        if billions is None or billions <= 0 or abs(math.log(billions / wanted.billions)) > _OTHER_FAMILY_SPAN:
            continue
        ranked.append((_distance(wanted, billions, parts.moe or _is_moe(data)), canonical))
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


def _no_kin(name: str, models: ModelEntries) -> str:
    """For a sized name of a family the catalog has no kin of: that it has none, and other families' models of
    about its size (or that there are none). Empty where the catalog has kin, or the name carries no size."""
    parts = name_parts(name)
    if parts.billions is None or parts.billions <= 0 or not models or model_suggestions(name, models, count=1):
        return ""
    family = echoed(parts.label)
    others = other_families(name, models)
    if not others:
        return f"no {family} model is in the catalog, nor one of another family of about {parts.billions:g}B; "
    listed = ", ".join(repr(o) for o in others)
    return f"no {family} model is in the catalog (of other families, about {parts.billions:g}B: {listed}); "


def model_hint(name: str, models: ModelEntries = ()) -> str:
    """How to give a model the catalog lacks: its config.json (for a name the Hub would not take as an id, such as
    one with a space: where to download it, the address written once), or its parameter count alone, the one the
    name carries (no size is made up for a name without one). With ``models``, a sized name of a family the
    catalog has no kin of is told so first, with other families' models of about its size."""
    billions = name_parts(name).billions
    lead = _no_kin(name, models)
    carried = billions is not None and billions > 0
    size = f"its size alone (--model {billions:g}b" if carried else "its parameter count alone (--model COUNT"
    repo = hub_id(name)
    if repo is None:
        return f"{lead}give its config.json (--model path/to/config.json) or {size}: a dense model of that many " \
               "parameters)"
    # the address in full or not at all: a cut one leads nowhere, and an id over the echo limit would pass it
    where = f", https://huggingface.co/{repo}/blob/main/config.json," if len(repo) <= ECHO_MAX else " from the hub"
    return f"{lead}download its config.json{where} and pass --model FILE (or its folder), or give {size})"


def closest_names(wanted: str, names: Iterable[str], count: int = 5) -> list[str]:
    """The ``count`` of ``names`` closest in spelling to ``wanted`` (difflib's ratio), closest first: what a
    one-line error lists in place of a long list."""
    return difflib.get_close_matches(wanted, list(names), n=count, cutoff=0.0)
