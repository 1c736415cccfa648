"""A checkpoint's tensors as its files store them, read from headers only: no weight is loaded.

A safetensors file is an 8-byte little-endian header length, a JSON header naming every tensor's ``dtype``,
``shape`` and ``data_offsets`` (begin, end) into the data that follows, then the data (the format's whole
specification: https://github.com/huggingface/safetensors#format). Reading those bytes directly gives each tensor's
stored size exactly, needs no tensor library, and opens a 600 GB checkpoint in milliseconds; the ``safetensors``
package's Python reader opens files only through a framework (numpy, torch) and does not expose the offsets, so
it writes the tests' files instead. A sharded checkpoint lists its files in ``model.safetensors.index.json``
(``weight_map``: tensor → file). GGUF files are read by `estimator.catalog.gguf_file`.

Each tensor gets a role (the values of `estimator.model.inventory.Role`) from its name, in Hugging Face or GGUF
spelling, so the report's weights-by-role shows the checkpoint's own bytes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from estimator.catalog.files import MAX_INDEX_BYTES, parse_json, read_limited
from estimator.catalog.specs import MAX_ELEMENTS, MAX_STORED_BYTES, Elements, StoredBytes
from estimator.errors import SpecInvalid

MAX_FILES = 1_000_000  # a checkpoint's shards: DeepSeek-V3 ships 163
MAX_HEADER_BYTES = 100_000_000  # safetensors' own ceiling on a header (its MAX_HEADER_SIZE)
# bytes per element of the whole-byte safetensors dtypes (safetensors Dtype); sub-byte ones (F4, F6) are not checked
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2,
               "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
# the compute dtype a checkpoint's dominant linear-weight dtype implies (the estimate's peak FLOP/s)
COMPUTE_DTYPE = {"BF16": "bf16", "F16": "fp16", "F32": "fp32", "F8_E4M3": "fp8", "F8_E5M2": "fp8"}

# (role, pattern) in order: the first pattern found in a tensor's name decides its role. Hugging Face names
# (model.layers.0.self_attn.q_proj.weight) and GGUF names (blk.0.attn_q.weight, llama.cpp's gguf-py
# constants.py TENSOR_NAMES) alike; a multimodal wrapper's towers come first, then the small tensors by suffix.
ROLE_PATTERNS: tuple[tuple[str, str], ...] = (
    ("projector", r"multi_modal_projector|mm_projector|audio_language_adapter|vision_projection|^mm\.|"
                  r"visual\.(merger|deepstack_merger)"),
    ("vision_tower", r"^(model\.)?(visual|vision_tower|vision_model|vision_encoder|image_encoder|vpm)\.|^v\."),
    ("audio_tower", r"^(model\.)?(audio_tower|audio_encoder|audio_model|whisper_encoder|apm)\.|^a\."),
    ("ssm", r"A_log$|\.D$|dt_bias$|conv1d|ssm_(a|d|dt)\b"),
    ("norm", r"(?i:norm)|\bln_|sinks$"),
    ("bias", r"[._]bias$"),
    ("router", r"(mlp|moe|block_sparse_moe|feed_forward)\.(gate|router)\.|shared_expert_gate|ffn_gate_inp|"
               r"e_score_correction"),
    ("position_embedding", r"embed_positions|position_embeddings|\bwpe\.|token_type_embeddings|position_embd"),
    ("embedding", r"embed_tokens|token_embd|\bwte\.|word_embeddings|tok_embeddings|embed_in\.|embeddings\.weight$"),
    ("lm_head", r"^(lm_head|output|embed_out)\."),
    ("shared_expert", r"shared_expert|shexp"),
    ("expert", r"experts|_exps"),
    ("mlp", r"mlp|ffn|feed_forward|up_proj|down_proj|gate_proj|dense_h_to_4h|dense_4h_to_h|\bfc[12]\b|c_fc"),
    ("attention", r"attn|attention|mixer|linear_attn|q_proj|k_proj|v_proj|o_proj|indexer|ssm_in|ssm_out"),
)


@functools.cache
def _compiled() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """`ROLE_PATTERNS` compiled, when a checkpoint's tensors are first placed (an estimate by name needs none)."""
    return tuple((role, re.compile(pattern)) for role, pattern in ROLE_PATTERNS)


def tensor_role(name: str) -> str:
    """The role of a checkpoint tensor from its name (`ROLE_PATTERNS`); ``other`` when no pattern places it."""
    return next((role for role, pattern in _compiled() if pattern.search(name)), "other")


@dataclass(frozen=True)
class StoredTensor:
    name: str
    dtype: str  # the file's spelling: BF16, F8_E4M3 (safetensors); Q4_K, F16 (GGUF)
    elements: int
    bytes: int


@dataclass(frozen=True)
class StoredWeights:
    """What a checkpoint's files hold, summed by role: (role, elements, bytes), largest first."""

    # stated here, not inherited (as CheckpointQuant's): pydantic gives a plain dataclass the config of the first
    # model that builds it, so docs/schema/specs/model.json would depend on which model was imported first
    __pydantic_config__ = ConfigDict(extra="forbid")

    source: Literal["safetensors", "gguf"]
    files: Annotated[int, Field(ge=0, le=MAX_FILES)]
    tensors: Annotated[int, Field(ge=0, le=MAX_ELEMENTS)]  # each holds at least one element
    roles: tuple[tuple[str, Elements, StoredBytes], ...]
    compute_dtype: str  # what its dominant linear-weight dtype computes in (bf16, fp16, fp32, fp8)

    def __post_init__(self) -> None:
        """The ceilings above hold when the readers build one, not only when pydantic validates one: a header may
        claim any shape, and a figure past them would reach the report."""
        if not 0 <= self.files <= MAX_FILES:
            raise SpecInvalid(f"checkpoint of {self.files:,} files is outside 0..{MAX_FILES:,}")
        if not 0 <= self.tensors <= MAX_ELEMENTS:
            raise SpecInvalid(f"checkpoint of {self.tensors:,} tensors is outside 0..{MAX_ELEMENTS:,}")
        for role, elements, stored in self.roles:
            if not (0 <= elements <= MAX_ELEMENTS and 0 <= stored <= MAX_STORED_BYTES):
                raise SpecInvalid(f"checkpoint {role} tensors of {elements:,} elements in {stored:,} bytes are "
                                  f"outside 0..{MAX_ELEMENTS:,} elements and 0..{MAX_STORED_BYTES:,} bytes")

    @property
    def bytes(self) -> int:
        return sum(b for _, _, b in self.roles)

    @property
    def format_name(self) -> str:
        return f"checkpoint-{self.source}"


def summarize(source: Literal["safetensors", "gguf"], files: int, tensors: Iterable[StoredTensor],
              dtype_of: Mapping[str, str], default_dtype: str) -> StoredWeights:
    """Tensors summed by role; the compute dtype is that of the dtype holding the most linear-weight bytes."""
    roles: dict[str, list[int]] = {}
    linear: dict[str, int] = {}
    count = 0
    for t in tensors:
        count += 1
        role = tensor_role(t.name)
        entry = roles.setdefault(role, [0, 0])
        entry[0] += t.elements
        entry[1] += t.bytes
        if role in ("attention", "mlp", "expert", "shared_expert"):
            linear[t.dtype] = linear.get(t.dtype, 0) + t.bytes
    dominant = max(linear, key=lambda d: linear[d]) if linear else ""
    ordered = sorted(((r, e, b) for r, (e, b) in roles.items()), key=lambda row: (-row[2], row[0]))
    return StoredWeights(source, files, count, tuple(ordered), dtype_of.get(dominant, default_dtype))


def _header(path: Path) -> dict[str, Any]:
    try:
        size = path.stat().st_size
        with path.open("rb") as file:
            length = int.from_bytes(file.read(8), "little")
            if size < 8 or length > min(MAX_HEADER_BYTES, size - 8):
                raise SpecInvalid(f"{path}: not a safetensors file (header length {length} for {size} bytes)")
            raw = file.read(length)
    except OSError as error:
        raise SpecInvalid(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        header = parse_json(raw, path)
    except SpecInvalid:
        raise SpecInvalid(f"{path}: the safetensors header is not JSON") from None
    if not isinstance(header, dict):
        raise SpecInvalid(f"{path}: the safetensors header is not a JSON object")
    header["__data_bytes__"] = size - 8 - length
    return header


def _tensor(path: Path, name: str, entry: Any, data_bytes: int) -> StoredTensor:
    try:
        dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    except (TypeError, KeyError):
        raise SpecInvalid(f"{path}: tensor {name!r} has a malformed header entry") from None
    return stored_tensor(path, name, dtype, shape, offsets, data_bytes)


def stored_tensor(where: object, name: str, dtype: Any, shape: Any, offsets: Any,
                  data_bytes: int | None = None) -> StoredTensor:
    """One header entry checked: whole offsets in order (within ``data_bytes``, the file's data, when known) that
    span the bytes its shape and dtype say; ``where`` names the file in the one-line refusal."""
    try:
        begin, end = offsets
        elements = 1
        for dim in shape:
            elements *= int(dim)
        ok = isinstance(begin, int) and isinstance(end, int) and 0 <= begin <= end \
            and (data_bytes is None or end <= data_bytes)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise SpecInvalid(f"{where}: tensor {name!r} has a malformed header entry")
    if dtype in DTYPE_BYTES and elements * DTYPE_BYTES[dtype] != end - begin:
        raise SpecInvalid(f"{where}: tensor {name!r} spans {end - begin} bytes, not {elements} × {dtype}")
    return StoredTensor(name, str(dtype), elements, end - begin)


def safetensors_tensors(path: Path) -> list[StoredTensor]:
    """Every tensor of one safetensors file, from its header."""
    header = _header(path)
    data_bytes = header.pop("__data_bytes__")
    header.pop("__metadata__", None)
    return [_tensor(path, name, entry, data_bytes) for name, entry in header.items()]


def _shards(folder: Path) -> list[Path]:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        raw = read_limited(index, MAX_INDEX_BYTES, "safetensors index")
        try:
            weight_map = parse_json(raw, index)["weight_map"]
            names = sorted(set(weight_map.values()))
        except (SpecInvalid, KeyError, TypeError, AttributeError):
            raise SpecInvalid(f"{index}: not a safetensors index (a JSON object with a weight_map)") from None
        missing = [n for n in names if not (folder / str(n)).is_file()]
        if missing:
            raise SpecInvalid(f"{index}: lists {len(missing)} missing file(s), e.g. {missing[0]}")
        return [folder / str(n) for n in names]
    return sorted(folder.glob("*.safetensors"))


def stored_safetensors(folder: Path) -> StoredWeights | None:
    """The weights a folder's safetensors files hold (None when it has none)."""
    shards = _shards(folder)
    if not shards:
        return None
    tensors = [t for shard in shards for t in safetensors_tensors(shard)]
    return summarize("safetensors", len(shards), tensors, COMPUTE_DTYPE, "bf16")


MAX_QUANT_CONFIG_BYTES = 16 << 20  # an hf_quant_config.json: NVIDIA's MiniMax-M3-NVFP4 lists every module in 3.1 MB
HF_QUANT_CONFIG = "hf_quant_config.json"  # NVIDIA ModelOpt's export writes it beside config.json


def hf_quant_config(folder: Path) -> Any:
    """A folder's ``hf_quant_config.json``, parsed (None when it has none); `checkpoint_quant.read_hf_quant_config`
    reads it."""
    file = folder / HF_QUANT_CONFIG
    if not file.is_file():
        return None
    return parse_json(read_limited(file, MAX_QUANT_CONFIG_BYTES, HF_QUANT_CONFIG), file)
