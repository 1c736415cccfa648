"""The checkpoint's own numbers: quantization_config read into the format its weights are stored in."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.checkpoint_quant import checkpoint_format, read_quantization
from estimator.catalog.registry import Catalog, model_from_config_file
from estimator.errors import SpecInvalid
from estimator.model.inventory import Role, tensor_inventory
from estimator.model.memory import weight_shares, weights_bytes
from estimator.request.formats import weights_format

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"


def _folder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name.split("--")[1]
    folder.mkdir()
    shutil.copy(CONFIGS / f"{name}.json", folder / "config.json")
    return folder


def _format(catalog: Catalog, q: dict[str, Any]) -> Any:
    quant = read_quantization(q)
    return checkpoint_format(quant, catalog.formats.get(quant.base))


def test_gpt_oss_stores_mxfp4_experts_and_bf16_rest(shipped_catalog: Catalog, tmp_path: Path) -> None:
    model = model_from_config_file(_folder(tmp_path, "openai--gpt-oss-120b"))
    assert model.checkpoint is not None and model.arch is not None
    fmt = weights_format(shipped_catalog, model, None, None)
    assert fmt.bits_per_weight == 4.25  # MXFP4: 4 + 8 / 32
    # modules_to_not_convert keeps self_attn, the router, embed_tokens and lm_head: MXFP4 covers the experts alone
    bits = {share.role: share.bits for share in weight_shares(model.arch, fmt)}
    assert bits[Role.EXPERT] == Fraction(17, 4) and {b for r, b in bits.items() if r is not Role.EXPERT} == {16}
    experts = sum(g.total for g in tensor_inventory(model.arch) if g.role is Role.EXPERT)
    rest = sum(g.total for g in tensor_inventory(model.arch)) - experts
    assert experts == 114_661_785_600  # 36 layers × 128 experts × (2880 × 5760 + 2880 × 2880); biases are bf16
    # experts × 4.25 / 8 bytes (ceil) + every other tensor in bf16
    assert weights_bytes(model.arch, fmt) == -(-experts * 17 // 32) + 2 * rest == 65_248_815_744


def test_deepseek_fp8_block_scales(shipped_catalog: Catalog) -> None:
    config = json.loads((CONFIGS / "deepseek-ai--DeepSeek-R1.json").read_text())
    fmt = _format(shipped_catalog, config["quantization_config"])
    assert fmt.bits_per_weight == 8 + 32 / (128 * 128)  # e4m3 + one fp32 scale_inv per 128 × 128 block
    assert fmt.compute_dtype == "fp8"


@pytest.mark.parametrize(("q", "base", "bits"), [
    ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "gptq-int4", 4 + 20 / 128),
    ({"quant_method": "awq", "bits": 4, "group_size": 64}, "awq-int4", 4 + 20 / 64),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_use_double_quant": True}, "nf4-dq",
     4 + 8 / 64 + 32 / (64 * 256)),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8", 8),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int",
                                                                               "group_size": 128}}}},
     "int4", 4 + 16 / 128),  # pack-quantized int4, a bf16 scale per group
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float",
                                                                               "group_size": 16}}}},
     "nvfp4", 4 + 8 / 16),
    ({"quant_algo": "FP8", "producer": {"name": "modelopt"}}, "fp8", 8),
])
def test_methods(shipped_catalog: Catalog, q: dict[str, Any], base: str, bits: float) -> None:
    assert read_quantization(q).base == base
    assert _format(shipped_catalog, q).bits_per_weight == pytest.approx(bits, rel=0, abs=1e-12)  # float sums


def test_unknown_method_is_named() -> None:
    with pytest.raises(SpecInvalid, match="'hqq' is not modelled; give --dtype"):
        read_quantization({"quant_method": "hqq"})


def test_estimate_uses_the_checkpoint_format_and_fits_one_h100(cli: Callable[..., Any], tmp_path: Path) -> None:
    folder = _folder(tmp_path, "openai--gpt-oss-120b")
    result = cli("estimate", "--model", str(folder), "--gpu", "h100", "--prompt-tokens", "4096", "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    roles = {share["role"]: share["bits_per_weight"] for share in report["memory"]["weights_by_role"]}
    assert roles["expert"] == 4.25 and roles["attention"] == 16
    assert report["memory"]["per_gpu_bytes"] < report["memory"]["capacity_bytes"]
    codes = [a["code"] for a in report["assumptions"]]
    assert "checkpoint-weights" in codes
    layers = {group["window"]: group["layers"] for group in report["memory"]["kv_by_window"]}
    assert layers == {None: 18, 128: 18}  # alternating full and 128-token sliding layers


def test_dtype_overrides_the_checkpoint(cli: Callable[..., Any], tmp_path: Path) -> None:
    folder = _folder(tmp_path, "openai--gpt-oss-120b")
    result = cli("estimate", "--model", str(folder), "--gpu", "h100", "--dtype", "bf16", "--format", "json")
    report = json.loads(result.stdout)
    assert {s["bits_per_weight"] for s in report["memory"]["weights_by_role"]} == {16}
    assert any(a["code"] == "checkpoint-overridden" for a in report["assumptions"])


def test_unmodelled_method_needs_dtype(cli: Callable[..., Any], tmp_path: Path) -> None:
    config = json.loads((CONFIGS / "Qwen--Qwen3-0.6B.json").read_text()) | {"quantization_config":
                                                                             {"quant_method": "hqq"}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    refused = cli("estimate", "--model", str(tmp_path), "--gpu", "h100")
    assert refused.exit_code != 0 and "give --dtype" in refused.stderr and "Traceback" not in refused.stderr
    assert cli("estimate", "--model", str(tmp_path), "--gpu", "h100", "--dtype", "bf16").exit_code == 0
