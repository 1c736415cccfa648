"""A local checkpoint read from its headers: safetensors folders (sharded with an index, or one file) and GGUF.

The files are built here with the maintained writers (``safetensors.numpy.save_file``, gguf's ``GGUFWriter``), tiny
but laid out as real checkpoints name their tensors; the estimate's weight bytes must equal the bytes the files
hold for their tensors, counted here by hand from each dtype's size.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from estimator.catalog.checkpoint_files import StoredWeights, safetensors_tensors, stored_safetensors, tensor_role
from estimator.catalog.registry import model_from_config_file
from estimator.errors import SpecInvalid

safetensors_numpy = pytest.importorskip("safetensors.numpy")
gguf = pytest.importorskip("gguf")

H, FFN, LAYERS, VOCAB, HEADS, KV_HEADS = 64, 128, 2, 256, 4, 2  # head_dim 16, KV width 2 × 16 = 32
CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": H, "intermediate_size": FFN,
          "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
          "vocab_size": VOCAB, "max_position_embeddings": 4096, "tie_word_embeddings": False,
          "torch_dtype": "float16"}


def _layer(i: int) -> dict[str, tuple[int, ...]]:
    p = f"model.layers.{i}."
    return {p + "self_attn.q_proj.weight": (H, H), p + "self_attn.k_proj.weight": (32, H),
            p + "self_attn.v_proj.weight": (32, H), p + "self_attn.o_proj.weight": (H, H),
            p + "mlp.gate_proj.weight": (FFN, H), p + "mlp.up_proj.weight": (FFN, H),
            p + "mlp.down_proj.weight": (H, FFN), p + "input_layernorm.weight": (H,),
            p + "post_attention_layernorm.weight": (H,)}


def _shapes() -> dict[str, tuple[int, ...]]:
    shapes = {"model.embed_tokens.weight": (VOCAB, H), "model.norm.weight": (H,), "lm_head.weight": (VOCAB, H)}
    for i in range(LAYERS):
        shapes.update(_layer(i))
    return shapes


# Per layer: attention 64·64·2 + 32·64·2 = 12,288 weights; MLP 3 × 128·64 = 24,576; norms 2 × 64 = 128.
# Model: embedding and head 256·64 = 16,384 each; final norm 64. Elements = 2 × 36,992 + 32,832 = 106,816.
ELEMENTS = 106_816
NORM_ELEMENTS = 2 * 128 + 64


def _write_folder(folder: Path, norm_dtype: Any = np.float32) -> int:
    """A two-shard safetensors checkpoint (fp16 matrices, fp32 norms) with its index; returns its tensor bytes."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    tensors = {n: np.zeros(s, dtype=norm_dtype if len(s) == 1 else np.float16) for n, s in _shapes().items()}
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[: len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    for file, part in shards.items():
        safetensors_numpy.save_file({n: tensors[n] for n in part}, str(folder / file))
    weight_map = {n: file for file, part in shards.items() for n in part}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return sum(t.nbytes for t in tensors.values())


def test_safetensors_folder_weights_are_the_files_tensor_bytes(tmp_path: Path) -> None:
    total = _write_folder(tmp_path / "ckpt")
    # fp16 matrices and fp32 norms: 2 × (106,816 − 320) + 4 × 320 = 212,992 + 1,280 = 214,272 bytes
    assert total == 2 * (ELEMENTS - NORM_ELEMENTS) + 4 * NORM_ELEMENTS == 214_272
    model = model_from_config_file(tmp_path / "ckpt")
    assert model.stored is not None
    assert (model.stored.source, model.stored.files, model.stored.tensors) == ("safetensors", 2, 21)
    assert model.stored.bytes == total
    roles = {r: (e, b) for r, e, b in model.stored.roles}
    assert roles["norm"] == (NORM_ELEMENTS, 4 * NORM_ELEMENTS)
    assert roles["attention"] == (2 * 12_288, 2 * 2 * 12_288)
    assert roles["embedding"] == roles["lm_head"] == (16_384, 32_768)
    assert model.stored.compute_dtype == "fp16"


def test_the_header_read_matches_the_safetensors_package(tmp_path: Path) -> None:
    """Shapes and dtypes as the maintained reader gives them; bytes as the data offsets span them."""
    _write_folder(tmp_path / "ckpt")
    from safetensors import safe_open

    for shard in sorted((tmp_path / "ckpt").glob("*.safetensors")):
        ours = {t.name: t for t in safetensors_tensors(shard)}
        with safe_open(str(shard), framework="numpy") as handle:
            assert set(handle.keys()) == set(ours)
            for name in handle.keys():  # noqa: SIM118  (safe_open has keys(), not iteration)
                piece = handle.get_slice(name)
                assert ours[name].elements == int(np.prod(piece.get_shape()))
                assert ours[name].dtype == piece.get_dtype()


def _estimate(cli: Callable[..., Any], model: str, *extra: str) -> dict[str, Any]:
    result = cli("--model", model, "--gpu", "h100", "--format", "json", *extra, entry="estimate")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_estimate_of_a_folder_uses_its_headers(cli: Callable[..., Any], tmp_path: Path) -> None:
    total = _write_folder(tmp_path / "ckpt")
    report = _estimate(cli, str(tmp_path / "ckpt"))
    memory = report["memory"]
    assert memory["weights_bytes"] == memory["weights_per_gpu_bytes"] == total == 214_272
    assert sum(part["bytes"] for part in memory["weights_by_role"]) == total
    codes = [n["code"] for n in report["assumptions"]]
    assert "checkpoint-headers" in codes
    assert report["model"]["params"] == ELEMENTS  # the architecture's own count agrees with the files
    overridden = _estimate(cli, str(tmp_path / "ckpt"), "--dtype", "bf16")
    assert overridden["memory"]["weights_bytes"] == 2 * ELEMENTS  # every weight in bf16
    assert "checkpoint-overridden" in [n["code"] for n in overridden["assumptions"]]


def test_a_config_file_alone_reads_no_weights(tmp_path: Path) -> None:
    _write_folder(tmp_path / "ckpt")
    assert model_from_config_file(tmp_path / "ckpt" / "config.json").stored is None


def test_a_single_file_without_index(tmp_path: Path) -> None:
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    safetensors_numpy.save_file({n: np.zeros(s, dtype=np.float16) for n, s in _shapes().items()},
                                str(folder / "model.safetensors"))
    stored = stored_safetensors(folder)
    assert stored is not None and stored.bytes == 2 * ELEMENTS == 213_632


def _raw(header: bytes, data: bytes = b"") -> bytes:
    return len(header).to_bytes(8, "little") + header + data


@pytest.mark.parametrize(("content", "message"), [
    (b"", "not a safetensors file"),
    ((200).to_bytes(8, "little") + b"{}", "not a safetensors file"),
    (_raw(b"[]"), "not a JSON object"),
    (_raw(b"{nope"), "not JSON"),
    (_raw(b'{"a": {"dtype": "F16", "shape": [4], "data_offsets": [0, 99]}}'), "malformed header entry"),
    (_raw(b'{"a": {"dtype": "F16", "shape": [4], "data_offsets": [0, 6]}}', bytes(8)), "spans 6 bytes, not 4 × F16"),
])
def test_bad_safetensors_files_are_one_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "model.safetensors").write_bytes(content)
    with pytest.raises(SpecInvalid, match=message):
        stored_safetensors(tmp_path)


def test_an_index_naming_a_missing_shard(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "gone.safetensors"}}))
    with pytest.raises(SpecInvalid, match="missing file"):
        stored_safetensors(tmp_path)


@pytest.mark.parametrize(("name", "role"), [
    ("model.layers.3.self_attn.q_proj.weight", "attention"),
    ("model.layers.3.mlp.experts.7.down_proj.weight_scale_inv", "expert"),
    ("model.layers.3.mlp.shared_experts.up_proj.weight", "shared_expert"),
    ("model.layers.3.mlp.gate.weight", "router"),
    ("model.layers.3.mlp.gate.e_score_correction_bias", "bias"),
    ("model.layers.0.mlp.experts.gate_up_proj_blocks", "expert"),
    ("model.layers.0.self_attn.sinks", "norm"),
    ("backbone.layers.0.mixer.in_proj.weight", "attention"),
    ("backbone.layers.0.mixer.A_log", "ssm"),
    ("backbone.embeddings.weight", "embedding"),
    ("visual.blocks.0.attn.qkv.weight", "vision_tower"),
    ("model.visual.merger.mlp.0.weight", "projector"),
    ("model.visual.deepstack_merger_list.0.norm.weight", "projector"),
    ("multi_modal_projector.linear_1.weight", "projector"),
    ("audio_tower.layers.0.fc1.weight", "audio_tower"),
    ("blk.0.attn_q.weight", "attention"),
    ("blk.0.ffn_gate_inp.weight", "router"),
    ("blk.0.ffn_down_exps.weight", "expert"),
    ("blk.0.ffn_up_shexp.weight", "shared_expert"),
    ("blk.0.attn_norm.weight", "norm"),
    ("token_embd.weight", "embedding"),
    ("output.weight", "lm_head"),
    ("output_norm.weight", "norm"),
    ("rope_freqs.weight", "other"),
])
def test_tensor_roles_from_names(name: str, role: str) -> None:
    assert tensor_role(name) == role


def _write_gguf(path: Path, *, tied: bool) -> int:
    """A llama GGUF: Q8_0 matrices (34 bytes per 32 weights), f32 norms, an f16 embedding; returns its tensor
    bytes counted from those sizes."""
    writer = gguf.GGUFWriter(str(path), "llama")
    for key, value in (("block_count", LAYERS), ("embedding_length", H), ("feed_forward_length", FFN),
                       ("context_length", 8192), ("attention.head_count", HEADS),
                       ("attention.head_count_kv", KV_HEADS)):
        writer.add_uint32(f"llama.{key}", value)
    writer.add_name("Tiny-Llama-Q8")
    q8 = gguf.GGMLQuantizationType.Q8_0
    total = 0

    def add(name: str, shape: tuple[int, ...], qtype: Any) -> None:
        nonlocal total
        data = np.zeros(shape, dtype=np.float32)
        if qtype == q8:
            writer.add_tensor(name, gguf.quants.quantize(data, q8), raw_dtype=q8)
            total += data.size // 32 * 34
        else:
            array = data.astype(np.float16 if qtype == "f16" else np.float32)
            writer.add_tensor(name, array)
            total += array.nbytes

    add("token_embd.weight", (VOCAB, H), "f16")
    add("output_norm.weight", (H,), "f32")
    if not tied:
        add("output.weight", (VOCAB, H), q8)
    for i in range(LAYERS):
        for short, shape in (("attn_q", (H, H)), ("attn_k", (32, H)), ("attn_v", (32, H)), ("attn_output", (H, H)),
                             ("ffn_gate", (FFN, H)), ("ffn_up", (FFN, H)), ("ffn_down", (H, FFN))):
            add(f"blk.{i}.{short}.weight", shape, q8)
        add(f"blk.{i}.attn_norm.weight", (H,), "f32")
        add(f"blk.{i}.ffn_norm.weight", (H,), "f32")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return total


def test_gguf_file_architecture_and_weights(cli: Callable[..., Any], tmp_path: Path) -> None:
    path = tmp_path / "tiny-q8_0.gguf"
    total = _write_gguf(path, tied=False)
    # embedding f16 16,384 × 2 = 32,768; norms f32 320 × 4 = 1,280; Q8_0 matrices (2 × 36,864 + 16,384) / 32 × 34
    # = 90,112 / 32 × 34 = 95,744: 129,792 bytes in all
    assert total == 32_768 + 1_280 + 95_744 == 129_792
    model = model_from_config_file(path)
    assert model.name == "Tiny-Llama-Q8"
    assert model.arch is not None and model.arch.model_type == "llama"
    assert (model.arch.num_layers, model.arch.hidden_size, model.arch.vocab_size) == (LAYERS, H, VOCAB)
    assert (model.arch.attention.num_kv_heads, model.arch.max_position_embeddings) == (KV_HEADS, 8192)
    assert model.stored is not None and model.stored.bytes == total
    report = _estimate(cli, str(path))
    assert report["memory"]["weights_bytes"] == total
    assert report["model"]["params"] == ELEMENTS
    assert report["gpu"]["compute_dtype"] == "fp16"


def test_gguf_without_output_tensor_ties_embeddings(tmp_path: Path) -> None:
    path = tmp_path / "tied.gguf"
    total = _write_gguf(path, tied=True)
    model = model_from_config_file(path)
    assert model.arch is not None and model.arch.tie_word_embeddings
    assert model.stored is not None and model.stored.bytes == total == 129_792 - 16_384 // 32 * 34


def test_bad_gguf_is_one_clear_error(cli: Callable[..., Any], tmp_path: Path) -> None:
    path = tmp_path / "broken.gguf"
    path.write_bytes(b"GGUFnot really")
    result = cli("--model", str(path), "--gpu", "h100", entry="estimate")
    assert result.exit_code != 0
    assert "not a readable GGUF file" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(("where", "extra", "name"), [
    ("models--Qwen--Qwen3-8B/snapshots/" + "a" * 40, {}, "Qwen/Qwen3-8B"),  # huggingface_hub's cache
    ("b" * 40, {}, "LlamaForCausalLM"),  # a folder named by a bare revision: its architectures entry
    ("my-llama", {}, "my-llama"),
    ("elsewhere", {"_name_or_path": "meta-llama/Llama-3.1-8B"}, "meta-llama/Llama-3.1-8B"),
    ("elsewhere", {"_name_or_path": "/data/checkpoints/llama-ft"}, "llama-ft"),  # a local path: its last folder
])
def test_a_folder_model_is_named_from_its_config_or_hub_folder(tmp_path: Path, where: str, extra: dict[str, str],
                                                               name: str) -> None:
    folder = tmp_path / where
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({**CONFIG, **extra}))
    assert model_from_config_file(folder).name == name


@pytest.mark.parametrize(("files", "tensors", "roles"), [
    (1_000_001, 1, (("mlp", 1, 2),)),  # more shards than MAX_FILES
    (1, 10**15 + 1, (("mlp", 1, 2),)),  # more tensors than MAX_ELEMENTS
    (1, 1, (("mlp", 10**15 + 1, 2),)),  # a role past MAX_ELEMENTS
    (1, 1, (("mlp", 1, 8 * 10**15 + 1),)),  # a role past MAX_STORED_BYTES
    (1, 1, (("mlp", -1, 2),)),
])
def test_stored_weights_limits_hold_when_a_reader_builds_one(
        files: int, tensors: int, roles: tuple[tuple[str, int, int], ...]) -> None:
    with pytest.raises(SpecInvalid, match="outside"):
        StoredWeights("safetensors", files, tensors, roles, "bf16")
    assert StoredWeights("safetensors", 163, 1, (("mlp", 10**15, 8 * 10**15),), "bf16").bytes == 8 * 10**15
