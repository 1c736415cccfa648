"""Count the elementwise passes one transformers decoder layer makes per token, by family and dtype.

The `hf` profile times a prefill's elementwise kernels (norms, rotary, activations, residual adds, casts, copies) as
``elementwise_hidden_passes`` × hidden + ``elementwise_ffn_passes`` × FFN width elements moved per token and layer.
This script reads those passes from the aten operations transformers' own forward dispatches (a TorchDispatchMode on
the CPU, random weights): every operation but the GEMMs, the attention kernel and the embedding lookup, that writes
a fresh tensor, counts the bytes of its tensor inputs and of what it writes; views move nothing. One layer is the
difference of a 2-layer and a 1-layer model; the bytes per token are solved for a × hidden + b × FFN from three
widths (multi-head: query, key and value heads as wide as the hidden state, the profile's convention), per token as
the difference of 128 and 64 tokens, checked against that of 256 and 128. Passes = bytes ÷ the dtype's element
size, in bf16 and in fp32 (where RMSNorm's upcast to fp32 copies nothing).

    pip install torch==2.13.0 transformers==5.17.0 pyyaml   # the transformers the hf profile describes
    python -m lab.measure.count_elementwise > tests/data/measured/elementwise-passes.json
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import torch
import transformers
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)
from lab.measure.random_architectures import random_config  # lab/measure/random_architectures.py, beside this file

FAMILIES = ("llama", "qwen2", "mistral", "gemma2", "gpt2")  # random_architectures.py's, drawn by random_config
# families of the catalog, each from one model's config.json in specs/models/ with its widths replaced
CATALOG_FAMILIES = {"qwen3": "qwen3-8b", "gemma3_text": "gemma-3-1b", "phi3": "phi-3-mini", "olmo2": "olmo-2-7b"}
SPECS = Path(__file__).resolve().parents[2] / "specs" / "models"
# GEMMs, attention and the embedding gather: timed by their FLOPs and weight bytes, not as elementwise passes
NOT_ELEMENTWISE = {"mm", "addmm", "bmm", "baddbmm", "linear", "matmul", "embedding", "scaled_dot_product_attention",
                   "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
                   "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention"}
IN_PLACE = {"copy_", "add_", "mul_", "masked_fill_"}
WIDTHS = ((256, 512), (512, 512), (256, 1024))  # (hidden, FFN): the base, then each widened alone
VOCAB = 512


def runs_strided(inputs: list[torch.Tensor], out: torch.Tensor) -> bool:
    """Whether CUDA runs this operation on TensorIterator's generic, non-vectorized kernels (``elementwise_kernel``,
    ``unrolled_elementwise_kernel``; lab/measure/elementwise_paths.py): an operand broadcast (more than one
    element, fewer than the output's) or not contiguous (rotary embedding on the transposed heads, RMSNorm's
    ``hidden * rsqrt(variance)`` and ``weight * hidden``), a non-contiguous output, or a cast to a wider type
    (16-bit to fp32; fp32 to 16-bit has its own vectorized copy). A reduction (an input larger than its output, as
    RMSNorm's mean) reads at the bandwidth."""
    if not out.is_contiguous():
        return True
    for t in inputs:
        if t.numel() <= 1:
            continue
        if t.numel() < out.numel() or not t.is_contiguous():
            return True
        if t.dtype != out.dtype and t.element_size() < out.element_size():
            return True
    return False


class ElementwiseBytes(TorchDispatchMode):
    """Bytes the elementwise operations of a forward read and write; of those, the bytes and the output elements of
    the operations CUDA runs on the non-vectorized paths (`runs_strided`)."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0
        self.strided_bytes = 0
        self.strided_elements = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = func.__name__.split(".")[0]
        if name in NOT_ELEMENTWISE:
            return out
        inputs = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        outputs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
        storages = {t.untyped_storage().data_ptr() for t in inputs}
        fresh = [o for o in outputs if o.untyped_storage().data_ptr() not in storages]
        if fresh or name in IN_PLACE:
            moved = sum(t.numel() * t.element_size() for t in inputs if t.numel() > 1)
            moved += sum(o.numel() * o.element_size() for o in fresh)
            self.total += moved
            written = max(fresh or inputs[:1], key=lambda t: t.numel())
            if runs_strided([t for t in inputs if t is not written or name not in IN_PLACE], written):
                self.strided_bytes += moved
                self.strided_elements += written.numel()
        return out


def _config(family: str, hidden: int, layers: int) -> dict[str, Any]:
    if family not in CATALOG_FAMILIES:
        return random_config(random.Random(0), family, hidden, layers)
    import yaml

    spec = yaml.safe_load((SPECS / f"{CATALOG_FAMILIES[family]}.yaml").read_text(encoding="utf-8"))
    dropped = ("layer_types", "architectures", "torch_dtype", "pad_token_id", "bos_token_id", "eos_token_id")
    config = {k: v for k, v in spec["config"].items() if k not in dropped}
    config.update(model_type=family, pad_token_id=0)  # a tiny vocabulary holds no original special token
    return config


def forward_bytes(family: str, hidden: int, ffn: int, layers: int, tokens: int, dtype: torch.dtype
                  ) -> tuple[int, int, int]:
    """(bytes moved, of which on the non-vectorized paths, output elements of those) of one forward."""
    config = _config(family, hidden, layers)
    heads = 4
    if family == "gpt2":
        config.update(n_embd=hidden, n_head=heads, n_layer=layers, n_inner=ffn, vocab_size=VOCAB, bos_token_id=0,
                      eos_token_id=0)
    else:
        config.update(hidden_size=hidden, intermediate_size=ffn, num_attention_heads=heads, num_key_value_heads=heads,
                      head_dim=hidden // heads, vocab_size=VOCAB, num_hidden_layers=layers)
    built = transformers.AutoConfig.for_model(**config)
    built._attn_implementation = "sdpa"
    model = transformers.AutoModelForCausalLM.from_config(built).to(dtype).eval()
    ids = torch.randint(0, VOCAB, (1, tokens))
    with torch.no_grad():
        model(ids, use_cache=False, logits_to_keep=1)
        mode = ElementwiseBytes()
        with mode:
            model(ids, use_cache=False, logits_to_keep=1)
    return mode.total, mode.strided_bytes, mode.strided_elements


def _layer(family: str, hidden: int, ffn: int, tokens: int, dtype: torch.dtype) -> tuple[int, ...]:
    two, one = (forward_bytes(family, hidden, ffn, layers, tokens, dtype) for layers in (2, 1))
    return tuple(a - b for a, b in zip(two, one, strict=True))


def counts(family: str, dtype: torch.dtype, tokens: tuple[int, int]) -> list[tuple[float, float]]:
    """Per token of one layer, each as (hidden, FFN) multiples: the passes (bytes ÷ the element size), the passes
    of the non-vectorized operations, and their output elements. The difference of two token counts, so what a
    layer does once per forward (Gemma's RMSNorm computes 1 + weight in fp32 on every call) drops out."""
    per_token = {}
    for hidden, ffn in WIDTHS:
        more, fewer = (_layer(family, hidden, ffn, t, dtype) for t in tokens)
        per_token[(hidden, ffn)] = [(m - f) / (tokens[0] - tokens[1]) for m, f in zip(more, fewer, strict=True)]
    (h0, f0), (h1, _), (_, f2) = WIDTHS
    size = torch.tensor([], dtype=dtype).element_size()
    out = []
    for index, unit in enumerate((size, size, 1)):
        per_hidden = (per_token[(h1, f0)][index] - per_token[(h0, f0)][index]) / (h1 - h0)
        per_ffn = (per_token[(h0, f2)][index] - per_token[(h0, f0)][index]) / (f2 - f0)
        out.append((round(per_hidden / unit, 1), round(per_ffn / unit, 1)))
    return out


def passes(family: str, dtype: torch.dtype, tokens: tuple[int, int]) -> tuple[float, float]:
    """(hidden passes, FFN passes) of one layer per token (`counts`)."""
    return counts(family, dtype, tokens)[0]


def main() -> None:
    out: dict[str, Any] = {"torch": torch.__version__, "transformers": transformers.__version__, "passes": {},
                           "strided": {}}
    for family in (*FAMILIES, *CATALOG_FAMILIES):
        counted = [counts(family, dtype, tokens) for dtype in (torch.bfloat16, torch.float32)
                   for tokens in ((128, 64), (256, 128))]
        assert counted[0] == counted[1] and counted[2] == counted[3], (family, counted)  # linear in tokens
        out["passes"][family] = [*counted[0][0], *counted[2][0]]
        # the non-vectorized operations: their passes and output elements, in 16-bit, then in fp32
        out["strided"][family] = [*counted[0][1], *counted[0][2], *counted[2][1], *counted[2][2]]
        print(family, out["passes"][family], out["strided"][family], file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
