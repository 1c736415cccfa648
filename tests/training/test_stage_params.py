"""Pipeline stages hold unequal parameters: the first the embedding, the last the output layer (and a tied
embedding's copy); model states per GPU are the busiest stage's (`training.stage_params`)."""

from __future__ import annotations

from fractions import Fraction

from estimator.catalog.registry import Catalog
from estimator.training.estimate import estimate_training
from estimator.training.stage_params import linear_share, weight_share
from estimator.training.workload import TrainingWorkload

# llama-3.1-8b: embedding and lm_head 128,256 × 4,096 = 525,336,576 each, final norm 4,096, 8,030,261,248 in all,
# so each of the 32 layers holds (8,030,261,248 − 2 × 525,336,576 − 4,096) / 32 = 218,112,000
LAYER, TABLE, TOTAL = 218_112_000, 525_336_576, 8_030_261_248
LAST_OF_4 = 8 * LAYER + TABLE + 4_096  # 2,270,236,672: 8 layers, the final norm and the output layer


def test_the_busiest_stage_holds_the_output_layer(shipped_catalog: Catalog) -> None:
    arch = shipped_catalog.models.get("llama-3.1-8b").arch
    assert arch is not None and 32 * LAYER + 2 * TABLE + 4_096 == TOTAL
    assert weight_share(arch, 1) == 1 and weight_share(arch, 4) == Fraction(LAST_OF_4 * 4, TOTAL)
    assert linear_share(arch, 4) == 1  # the linear weights are all inside the 8-layer stages
    # two stages: 16 layers + the embedding against 16 layers + the norm and the head: the last, by the norm
    assert weight_share(arch, 2) == Fraction((16 * LAYER + TABLE + 4_096) * 2, TOTAL)


def test_model_states_per_gpu_are_the_busiest_stages(shipped_catalog: Catalog) -> None:
    model, gpu = shipped_catalog.models.get("llama-3.1-8b"), shipped_catalog.gpus.get("h100")
    w = TrainingWorkload(pp=4, grad_accum=8, precision="bf16", profile=shipped_catalog.profiles.get("megatron"))
    memory = estimate_training(model, gpu, w).memory
    # pure bf16 training: 2-byte weights and gradients, no master copy, two 2-byte AdamW states, of the last
    # stage's 2,270,236,672 parameters (an even quarter, 2,007,565,312, is 11.6 % fewer)
    assert memory.weights_bytes == 2 * LAST_OF_4 and memory.gradient_bytes == 2 * LAST_OF_4
    assert memory.master_weights_bytes == 0 and memory.optimizer_bytes == 4 * LAST_OF_4


def test_a_tied_embedding_is_held_again_on_the_last_stage(shipped_catalog: Catalog) -> None:
    arch = shipped_catalog.models.get("llama-3.2-1b").arch
    assert arch is not None and arch.tie_word_embeddings
    # 1,235,814,400 parameters: embedding 128,256 × 2,048 = 262,668,288 (counted once), final norm 2,048, 16
    # layers of (1,235,814,400 − 262,668,288 − 2,048) / 16 = 60,821,504; over 2 stages the last holds 8 layers,
    # the norm and the embedding's copy as its output layer
    last = 8 * 60_821_504 + 2_048 + 262_668_288
    assert weight_share(arch, 2) == Fraction(last * 2, 1_235_814_400)
