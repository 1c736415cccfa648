"""A checkpoint's format applies to the modules it quantizes: exclusions, hf_quant_config.json and ModelOpt's
mixed-precision map, read from NVIDIA's and the publishers' own files (tests/data/quant/SOURCES.yaml), resolved
against the tensor inventory; every figure is Σ numel × bits / 8 per role, in integers."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.architecture import Architecture
from estimator.catalog.checkpoint_quant import read_hf_quant_config
from estimator.catalog.registry import Catalog, model_from_config_file
from estimator.errors import SpecInvalid
from estimator.model.inventory import Role, tensor_inventory
from estimator.model.memory import weight_shares, weights_bytes
from estimator.model.modules import rule
from estimator.request.formats import weights_format

QUANT = Path(__file__).resolve().parents[1] / "data" / "quant"


def _numel(arch: Architecture, role: Role, name: str = "") -> int:
    return sum(g.total for g in tensor_inventory(arch) if g.role is role and name in g.name)


def _ceil(numel: int, bits_num: int, bits_den: int = 1) -> int:
    """numel × bits / 8 bytes, rounded up."""
    return -(-numel * bits_num // (8 * bits_den))


def _folder(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(QUANT / name, tmp_path / name))


@pytest.mark.parametrize(("pattern", "layer", "role", "leaf"), [
    ("model.layers.*.self_attn", None, "attention", "self_attn"),  # gpt-oss modules_to_not_convert
    ("model.layers.*.mlp.router", None, "router", "router"),
    ("lm_head", None, "lm_head", "lm_head"),
    ("re:.*shared_experts.*", None, "shared_expert", "shared_experts"),  # Kimi-K2.5 compressed-tensors ignore
    ("re:.*mlp\\.(gate|up|gate_up|down)_proj.*", None, "mlp", None),
    ("model.layers.12.self_attn.kv_b_proj", 12, "attention", "kv_b_proj"),  # DeepSeek-V3.1-NVFP4
    ("language_model.model.layers.0*", 0, None, None),  # Kimi-K2.6-NVFP4: a whole layer
    ("model.layers.3.block_sparse_moe.gate", 3, "router", "gate"),  # MiniMax-M2.5-NVFP4
    ("gate", None, None, "gate"),  # MiniMax-M2.5's own modules_to_not_convert
])
def test_patterns_read_as_rules(pattern: str, layer: int | None, role: str | None, leaf: str | None) -> None:
    r = rule(pattern)
    assert (r.layer, r.role, r.leaf) == (layer, role, leaf)


def test_hf_quant_config_nvfp4_excluding_routers_and_head(shipped_catalog: Catalog, tmp_path: Path) -> None:
    """nvidia/Qwen3-235B-A22B-NVFP4: NVFP4 (4 + 8/16 bits) everywhere but the 94 routers and lm_head."""
    hf = json.loads((QUANT / "nvidia--Qwen3-235B-A22B-NVFP4" / "hf_quant_config.json").read_text())
    quant = read_hf_quant_config(hf)
    assert (quant.method, quant.base, len(quant.kept)) == ("modelopt", "nvfp4", 95)
    model = model_from_config_file(_folder(tmp_path, "nvidia--Qwen3-235B-A22B-NVFP4"))
    assert model.checkpoint == quant and model.arch is not None  # read from the folder's hf_quant_config.json
    arch, fmt = model.arch, weights_format(shipped_catalog, model, None, None)
    bits = {s.role: s.bits for s in weight_shares(arch, fmt)}
    assert bits[Role.ATTENTION] == bits[Role.EXPERT] == 4.5
    assert bits[Role.ROUTER] == bits[Role.LM_HEAD] == bits[Role.EMBEDDING] == 16
    quantized = _numel(arch, Role.ATTENTION) + _numel(arch, Role.EXPERT)
    rest = sum(g.total for g in tensor_inventory(arch)) - quantized
    assert weights_bytes(arch, fmt) == (_ceil(_numel(arch, Role.ATTENTION), 9, 2) + _ceil(_numel(arch, Role.EXPERT),
                                                                                          9, 2) + 2 * rest)


def test_per_layer_exclusions_leave_o_proj_quantized(shipped_catalog: Catalog, tmp_path: Path) -> None:
    """nvidia/DeepSeek-V3.1-NVFP4 excludes q_a, q_b, kv_a and kv_b of each of the 61 layers (and the MTP layer 61,
    which no count holds): o_proj and every MLP and expert are NVFP4, the other attention projections bf16."""
    model = model_from_config_file(_folder(tmp_path, "nvidia--DeepSeek-V3.1-NVFP4"))
    assert model.arch is not None and model.checkpoint is not None and len(model.checkpoint.kept) == 246
    arch, fmt = model.arch, weights_format(shipped_catalog, model, None, None)
    attention = {s.role: s for s in weight_shares(arch, fmt)}[Role.ATTENTION]
    o_proj = _numel(arch, Role.ATTENTION, "o_proj")
    assert o_proj == 61 * 128 * 128 * 7168
    assert attention.bytes == _ceil(o_proj, 9, 2) + 2 * (_numel(arch, Role.ATTENTION) - o_proj)
    linear = sum(_numel(arch, r) for r in (Role.MLP, Role.EXPERT, Role.SHARED_EXPERT))
    rest = sum(g.total for g in tensor_inventory(arch)) - linear - _numel(arch, Role.ATTENTION)
    assert weights_bytes(arch, fmt) == (attention.bytes + sum(_ceil(_numel(arch, r), 9, 2) for r in
                                                              (Role.MLP, Role.EXPERT, Role.SHARED_EXPERT)) + 2 * rest)


def test_mixed_precision_each_module_in_its_own_format(shipped_catalog: Catalog) -> None:
    """nvidia/Qwen3.6-35B-A3B-NVFP4 (MIXED_PRECISION): experts, shared experts and lm_head W4A16_NVFP4, every
    attention projection FP8, the rest (embeddings, routers, towers) bf16 — not FP8 or NVFP4 throughout."""
    hf = json.loads((QUANT / "nvidia--Qwen3.6-35B-A3B-NVFP4" / "hf_quant_config.json").read_text())
    quant = read_hf_quant_config(hf)
    assert (quant.base, len(quant.modules), quant.kept) == ("nvfp4", 291, ("mtp.layers.0*", "mtp*"))
    model = shipped_catalog.models.get("qwen3.6-35b-a3b").model_copy(update={"checkpoint": quant})
    assert model.arch is not None
    arch, fmt = model.arch, weights_format(shipped_catalog, model, None, None)
    assert fmt.name == "checkpoint-nvfp4-mixed"
    shares = {s.role: s for s in weight_shares(arch, fmt)}
    assert {r: shares[r].bits for r in (Role.EXPERT, Role.SHARED_EXPERT, Role.LM_HEAD)} == dict.fromkeys(
        (Role.EXPERT, Role.SHARED_EXPERT, Role.LM_HEAD), 4.5)
    # FP8 attention projections: the checkpoint's in_proj_qkv and in_proj_z are the inventory's fused in_proj_qkvz;
    # in_proj_b and in_proj_a (the inventory's in_proj_ba) are not in the map, so bf16
    ba = _numel(arch, Role.ATTENTION, "in_proj_ba")
    assert ba == 30 * 2048 * 64
    assert shares[Role.ATTENTION].bytes == _numel(arch, Role.ATTENTION) - ba + 2 * ba
    assert shares[Role.EMBEDDING].bits == shares[Role.ROUTER].bits == shares[Role.VISION_TOWER].bits == 16


def test_mixed_precision_unknown_algorithm_is_named() -> None:
    with pytest.raises(SpecInvalid, match="'W4A8_NEW' is not modelled; give --dtype"):
        read_hf_quant_config({"quantization": {"quant_algo": "MIXED_PRECISION",
                                               "quantized_layers": {"model.layers.0.mlp": {"quant_algo": "W4A8_NEW"}}}})


def test_hf_quant_config_without_quantization_is_one_line() -> None:
    with pytest.raises(SpecInvalid, match="no 'quantization' mapping"):
        read_hf_quant_config({"producer": {"name": "modelopt"}})


def test_catalog_model_defaults_to_its_checkpoint(cli: Callable[..., Any]) -> None:
    """gpt-oss-120b: MXFP4 experts, the rest bf16, 65.2 GB: fits one H100 80GB (it was 233.7 GB in bf16)."""
    result = cli("estimate", "--model", "gpt-oss-120b", "--gpu", "h100", "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    bits = {share["role"]: share["bits_per_weight"] for share in report["memory"]["weights_by_role"]}
    assert bits.pop("expert") == 4.25 and set(bits.values()) == {16}
    assert report["memory"]["weights_bytes"] == 65_248_815_744
    assert report["memory"]["per_gpu_bytes"] <= report["memory"]["capacity_bytes"]
    said = [a["text"] for a in report["assumptions"] if a["code"] == "checkpoint-weights"]
    assert len(said) == 1 and "MXFP4" in said[0] and "covers expert;" in said[0]
    overridden = json.loads(cli("estimate", "--model", "gpt-oss-120b", "--gpu", "h100", "--dtype", "bf16",
                                "--format", "json").stdout)
    assert overridden["memory"]["weights_bytes"] == 2 * 116_829_156_672
    assert "checkpoint-overridden" in [a["code"] for a in overridden["assumptions"]]


def test_gpt_oss_20b_is_its_checkpoint_bytes(shipped_catalog: Catalog) -> None:
    """gpt-oss-20b as its checkpoint stores it: 24 layers × 32 experts × 2880 × 8640 MXFP4 weights (4 bits, an
    8-bit scale per 32), everything else bf16 — what the published safetensors hold, and what transformers' MXFP4
    experts hold on the GPU (docs/accuracy.md: the measured expert blocks equal ours to the byte)."""
    model = shipped_catalog.models.get("gpt-oss-20b")
    assert model.arch is not None
    fmt = weights_format(shipped_catalog, model, None, None)
    experts = _numel(model.arch, Role.EXPERT)
    assert experts == 24 * 32 * 2880 * 8640
    rest = sum(g.total for g in tensor_inventory(model.arch)) - experts
    assert weights_bytes(model.arch, fmt) == _ceil(experts, 17, 4) + 2 * rest == 13_761_264_768
    # --dtype mxfp4 covers what the checkpoint covers: the routed experts, not attention
    assert weights_bytes(model.arch, weights_format(shipped_catalog, model, "mxfp4", None)) == 13_761_264_768


@pytest.mark.parametrize("command", [["estimate"], ["plan", "--concurrency", "4"],
                                     ["sweep", "--batch", "1", "--prompt-tokens", "128"]])
def test_mxfp4_on_a_dense_model_is_refused(cli: Callable[..., Any], command: list[str]) -> None:
    """In every mode: a format of the routed experts alone would leave a dense model all 16-bit under its name."""
    refused = cli(*command, "--model", "llama-3.1-8b", "--gpu", "h100", "--dtype", "mxfp4")
    assert refused.exit_code != 0 and "quantizes routed experts only" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_whole_layer_and_per_layer_ignores_in_config_json(shipped_catalog: Catalog, tmp_path: Path) -> None:
    """nvidia/Kimi-K2.6-NVFP4's config.json ignores all of layer 0 (attention and its dense MLP), every layer's
    self_attn and shared experts and the head: NVFP4 covers the routed experts of layers 1–60 alone."""
    model = model_from_config_file(_folder(tmp_path, "nvidia--Kimi-K2.6-NVFP4"))
    assert model.arch is not None and model.checkpoint is not None and len(model.checkpoint.kept) == 124
    arch, fmt = model.arch, weights_format(shipped_catalog, model, None, None)
    bits = {s.role: s.bits for s in weight_shares(arch, fmt)}
    assert bits.pop(Role.EXPERT) == 4.5 and set(bits.values()) == {16}
    experts = _numel(arch, Role.EXPERT)
    assert experts == 60 * 384 * 3 * 7168 * 2048
    assert weights_bytes(arch, fmt) == _ceil(experts, 9, 2) + 2 * (sum(g.total for g in tensor_inventory(arch))
                                                                    - experts)


def test_mixed_precision_read_from_config_json(shipped_catalog: Catalog, tmp_path: Path) -> None:
    """nvidia/Qwen3.6-27B-NVFP4's config.json carries the MIXED_PRECISION map itself: the MLP and lm_head
    W4A16_NVFP4, the attention projections (full and linear) FP8, the rest — embeddings, in_proj_ba, towers — bf16."""
    model = model_from_config_file(_folder(tmp_path, "nvidia--Qwen3.6-27B-NVFP4"))
    assert model.arch is not None and model.checkpoint is not None and len(model.checkpoint.modules) == 401
    arch, fmt = model.arch, weights_format(shipped_catalog, model, None, None)
    shares = {s.role: s for s in weight_shares(arch, fmt)}
    assert shares[Role.MLP].bits == shares[Role.LM_HEAD].bits == 4.5
    ba = _numel(arch, Role.ATTENTION, "in_proj_ba")
    assert shares[Role.ATTENTION].bytes == _numel(arch, Role.ATTENTION) - ba + 2 * ba
    assert shares[Role.EMBEDDING].bits == shares[Role.VISION_TOWER].bits == 16


def test_plan_and_sweep_default_to_the_checkpoint_as_estimate(cli: Callable[..., Any]) -> None:
    """Every mode reads the model as its checkpoint stores it unless --dtype says otherwise."""
    plan = json.loads(cli("plan", "--model", "gpt-oss-120b", "--gpu", "h100", "--concurrency", "4",
                          "--format", "json").stdout)
    sweep = json.loads(cli("sweep", "--model", "gpt-oss-120b", "--gpu", "h100", "--batch", "1", "--prompt-tokens",
                           "1k", "--format", "json").stdout)
    assert plan["dtype"] == "checkpoint-mxfp4"
    assert [(row["workload.dtype"], row["memory.weights_bytes"]) for row in sweep] == [("checkpoint-mxfp4",
                                                                                        65_248_815_744)]
