"""Count the aten operations a transformers training step dispatches, by family and precision.

The `hf` profile times an eager training step's host dispatch as operations × the host's cost per operation
(`estimator.training.host_ops`). This script reads the operations from transformers' own model (a TorchDispatchMode,
random weights, toy widths: the count does not depend on width or tokens): the forward under the loss, and its
backward, with activation checkpointing off and on (non-reentrant, as `random_architectures.py` and transformers'
`gradient_checkpointing_enable` run it), in bf16, under autocast (amp: fp32 weights, bf16 compute) and in fp32.
One layer is the difference of a 2-layer and a 1-layer model, checked against a 3-layer one; what the step does
outside the layers (embedding, final norm, head, loss) is the 1-layer count less one layer.

Attention moves the count: the per-precision figures are a multi-head model's (the fused kernel); one KV head, and
PyTorch's math kernel (fp32 with grouped KV heads on CUDA, `attention_kernels.runs_math_attention`; forced here with
`sdpa_kernel(MATH)`, since the CPU's flash kernel takes fp32) add or drop a few operations per layer, given per
family (phi3's fused QKV projection makes its math kernel one operation fewer).

    # on the H200 (PyTorch 2.11, transformers 5.17): what the hf profiles ship
    python -m lab.measure.count_train_ops --device cuda > tests/data/measured/train-ops.json
    # on a CPU machine: pip install torch==2.13.0 transformers==5.17.0 pyyaml
    python -m lab.measure.count_train_ops > tests/data/measured/train-ops-cpu.json

The two agree for the decoder families but in the checkpointed forward, where CUDA issues two more operations a
layer (checkpointing stashes the CUDA RNG state); GPT-2's MLP and phi3's fused projections dispatch differently.
Each family's entry is, per precision, [forward, backward, checkpointed forward, checkpointed backward] per layer,
then [forward, backward] outside the layers; and per attention case (`fused_single`: one KV head; `math_grouped` and
`math_single`: the math kernel, fp32) the four per-layer phases beyond the multi-head count.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import torch
import transformers
from torch.nn.attention import SDPBackend, sdpa_kernel

from estimator.live.host_cost import count_ops
from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)
from lab.measure.count_elementwise import CATALOG_FAMILIES, FAMILIES
from lab.measure.count_elementwise import _config as family_config

MODES = ("bf16", "amp", "fp32")
HEADS = 8
SHAPES = {"multi": HEADS, "grouped": 2, "single": 1}  # KV heads
VOCAB = 256


def toy_config(family: str, layers: int, kv_heads: int) -> dict[str, Any]:
    """``family``'s config (random_architectures's draw, or a catalog model's) at toy width and ``layers`` deep."""
    config = family_config(family, 64, layers)
    if family == "gpt2":
        config.update(n_embd=8 * HEADS, n_head=HEADS, n_layer=layers, n_inner=None, vocab_size=VOCAB,
                      bos_token_id=0, eos_token_id=0)
        return config
    config.update(hidden_size=8 * HEADS, intermediate_size=32, num_attention_heads=HEADS, num_key_value_heads=kv_heads,
                  head_dim=8, vocab_size=VOCAB, num_hidden_layers=layers)
    config.pop("layer_types", None)
    return config


def _kernel(math: bool) -> contextlib.AbstractContextManager[Any]:
    return sdpa_kernel(SDPBackend.MATH) if math else contextlib.nullcontext()


def step_ops(config: dict[str, Any], mode: str, checkpointed: bool, device: str, math: bool) -> tuple[int, int]:
    """(forward, backward) operations of one training step's second micro-batch (the first sets up caches)."""
    built = transformers.AutoConfig.for_model(**config)
    built._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(built)
    model = model.to(torch.bfloat16 if mode == "bf16" else torch.float32).train()
    if checkpointed and hasattr(model, "activation_checkpointing_enable"):  # transformers 5.24's name (the old warns)
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    elif checkpointed:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    ids = torch.randint(0, VOCAB, (1, 16), device=device)
    held: dict[str, Any] = {}

    def forward() -> None:
        with _kernel(math), torch.autocast(device, dtype=torch.bfloat16, enabled=mode == "amp"):
            held["loss"] = model(input_ids=ids, labels=ids, use_cache=False).loss

    def backward() -> None:
        with _kernel(math):
            held.pop("loss").backward()

    counts = (0, 0)
    for _ in range(2):
        counts = (count_ops(forward), count_ops(backward))
    return counts


def _all_phases(family: str, mode: str, layers: int, shape: str, device: str, math: bool) -> list[int]:
    """[forward, backward, checkpointed forward, checkpointed backward] of a ``layers``-deep model."""
    config = toy_config(family, layers, SHAPES[shape])
    plain, checkpointed = (step_ops(config, mode, ck, device, math) for ck in (False, True))
    return [*plain, *checkpointed]


def per_layer(family: str, mode: str, shape: str, device: str, math: bool) -> tuple[list[int], list[int]]:
    """(per layer, outside the layers) for each phase, asserting the count is linear in layers."""
    one, two, three = (_all_phases(family, mode, n, shape, device, math) for n in (1, 2, 3))
    layer = [b - a for a, b in zip(one, two, strict=True)]
    assert layer == [c - b for b, c in zip(two, three, strict=True)], (family, mode, shape, one, two, three)
    fixed = [a - d for a, d in zip(one, layer, strict=True)]
    assert fixed[:2] == fixed[2:], (family, mode, shape, fixed)  # checkpointing wraps the layers only
    return layer, fixed[:2]


def attention_extra(family: str, device: str, base: dict[str, list[int]]) -> Iterator[tuple[str, list[int]]]:
    """Operations per layer beyond the multi-head fused kernel's: one KV head, and the math kernel (fp32)."""
    if family == "gpt2":  # no grouped KV heads
        return
    cases = (("fused_single", "bf16", "single", False), ("math_grouped", "fp32", "grouped", True),
             ("math_single", "fp32", "single", True))
    for name, mode, shape, math in cases:
        layer, _ = per_layer(family, mode, shape, device, math)
        yield name, [a - b for a, b in zip(layer, base[mode], strict=True)]


def count(device: str) -> dict[str, Any]:
    out: dict[str, Any] = {"torch": torch.__version__, "transformers": transformers.__version__, "device": device,
                           "ops": {}}
    for family in (*FAMILIES, *CATALOG_FAMILIES):
        entry, base = {}, {}
        for mode in MODES:
            layer, fixed = per_layer(family, mode, "multi", device, False)
            entry[mode], base[mode] = [*layer, *fixed], layer
        entry.update(attention_extra(family, device, base))
        out["ops"][family] = entry
        print(family, entry, file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu (the shipped count) or cuda (to compare)")
    print(json.dumps(count(parser.parse_args().device), indent=1))


if __name__ == "__main__":
    main()
