"""Model states: ZeRO paper figures, PyTorch AMP and pure-bf16 byte counts, LoRA adapter counts."""

from __future__ import annotations

import pytest

from estimator import default_catalog
from estimator.training.states import lora_params, model_states, optimizer_step_transient_bytes

PSI = 7_500_000_000  # the ZeRO paper's example model (Rajbhandari et al. 2020, Figure 1), N_d = 64, K = 12


@pytest.mark.parametrize(("stage", "expected"), [
    (0, 120_000_000_000),  # (2 + 2 + 12) × 7.5e9
    (1, 31_406_250_000),   # 4 × 7.5e9 + 12 × 7.5e9 / 64 → "31.4 GB"
    (2, 16_640_625_000),   # 2 × 7.5e9 + 14 × 7.5e9 / 64 → "16.6 GB"
    (3, 1_875_000_000),    # 16 × 7.5e9 / 64 → "1.9 GB"
])
def test_zero_paper_example(stage: int, expected: int) -> None:
    states = model_states(PSI, "amp-bf16", "adamw", stage=stage, dp=64, deepspeed=True)
    assert states.total_bytes == expected


def test_pytorch_amp_is_4_4_8() -> None:
    states = model_states(1_235_814_400, "amp-bf16", "adamw", stage=0, dp=1)
    assert states.weights_bytes == 4_943_257_600  # 1,235,814,400 × 4 (fp32 parameters)
    assert states.gradient_bytes == 4_943_257_600  # × 4 (fp32 gradients)
    assert states.master_bytes == 0
    assert states.optimizer_bytes == 9_886_515_200  # × 8 (fp32 m and v)


@pytest.mark.parametrize(("optimizer", "per_param"), [
    ("adamw", 4), ("adamw-fused", 4), ("adam-8bit", 2), ("sgd", 0), ("sgd-momentum", 2), ("lion", 2)])
def test_bf16_optimizer_states_follow_the_parameter_dtype(optimizer: str, per_param: int) -> None:
    states = model_states(1000, "bf16", optimizer, stage=0, dp=1)  # type: ignore[arg-type]
    assert (states.weights_bytes, states.gradient_bytes) == (2000, 2000)
    assert states.optimizer_bytes == 1000 * per_param


def test_foreach_adamw_step_allocates_one_state_sized_buffer() -> None:
    assert optimizer_step_transient_bytes("adamw", optimizer_params=10, state_bytes=4, largest_tensor=3,
                                          foreach=True) == 40
    assert optimizer_step_transient_bytes("adamw-fused", optimizer_params=10, state_bytes=4, largest_tensor=3,
                                          foreach=True) == 0


def test_lora_params_llama_8b_rank_16_all_linear() -> None:
    arch = default_catalog().models.get("llama-3.1-8b").arch
    assert arch is not None
    # per layer 16 × [(4096+4096) + 2 × (4096+1024) + (4096+4096) + 2 × (4096+14336) + (14336+4096)] = 16 × 81,920
    assert lora_params(arch, 16, ("q", "k", "v", "o", "gate", "up", "down")) == 41_943_040  # × 32 layers
    assert lora_params(arch, 8, ("q", "v")) == 8 * (8192 + 5120) * 32
