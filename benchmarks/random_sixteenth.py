"""The sixteenth pass of issue 15 (docs/accuracy.md, written by benchmarks/random_report.py): a 16-bit prefill on
PyTorch's math SDPA kernel (item 30). Every figure after the change is computed here; the figures before it are quoted
from commit 1e8f60f (`python benchmarks/reference_points.py tests/data/measured/h200-2026-11-30-extra.jsonl` there).

    python benchmarks/random_sixteenth.py      # the section as docs/accuracy.md prints it
"""

from __future__ import annotations

from pathlib import Path

from random_fifteenth import falcon_rows
from random_points import DATA
from random_thirteenth import _wrap

# falcon-7b's HF prefills (the catalog's second run) at 1e8f60f, before item 30
BEFORE_FALCON = {"b1 s2048": -0.207, "b1 s8192": -0.314, "b8 s2048": -0.193}


def falcon_prefills() -> str:
    return falcon_rows("prefill_s hf", BEFORE_FALCON, "falcon-7b prefill ", " logits=last")


MATH_PREFILL = (
    "30. **A 16-bit prefill on PyTorch's math SDPA kernel** (falcon-7b's HF prefill read 19–31% low). Falcon hands "
    "SDPA its one KV head and a mask without `enable_gqa`, so only the math kernel runs (items 1 and 28); item 4 timed "
    "its fp32 GEMMs by their FLOPs and its passes at 38 bytes a score, both counted for an fp32 call. Traced under "
    "torch.profiler on the CPU (tests/model/test_math_prefill.py), the composite "
    "(`_scaled_dot_product_attention_math`) called with 16-bit inputs does two things more. It converts its fp32 "
    "probabilities back to the inputs' dtype before PV — it returns them beside the output, and SDPA drops them — "
    "so 4 + 2 more bytes a score, 44 in all (`compute.math_sdpa_pass_bytes`; an fp32 call's conversion returns its "
    "input). And each of its two matmuls broadcasts the KV head over the query heads: K and V are copied once per "
    "head in fp32, then batched fp32 GEMMs of every prompt position run per sequence and head — item 28's decode "
    "with the whole prompt as queries (`attention_kernels.math_decode_work`, `queries`), so the prefill now times "
    "them as the decode does: the copies at repeat_kv's fp32 rate and the GEMMs by shape at item 23's fp32 figures "
    "(4.0 µs, the longer of their FLOPs at 0.70 of the fp32 peak and their bytes at 0.25 of the bandwidth: a QKᵀ of "
    "64-wide heads writes 4 bytes a score for 128 FLOPs, which the SGEMM kernels stage below HBM speed). Nothing "
    "was fitted. falcon-7b prefill, before → after: {falcon}. Those three rows showed the miss and judge it, so "
    "this is not blind. What the 8,192-token row still lacks is not known from these rows alone: there the fp32 "
    "mask (268 MB) no longer fits the L2 cache that holds the 2,048-token one, so each head's add may read it again "
    "from memory; and `_safe_softmax`'s `where` broadcasts a per-row condition, which TensorIterator runs on its "
    "non-vectorized kernel. `benchmarks/measure_math_prefill.py` (random Falcon-style models with every kernel by "
    "name, and SDPA alone on Falcon's operands) was written to tell, and has not run on a GPU yet.")


def sixteenth_pass(data: Path = DATA) -> str:
    return "\n".join(["### Sixteenth pass (item 30): a 16-bit prefill on the math kernel", "",
                      _wrap(MATH_PREFILL.format(falcon=falcon_prefills()), ""), ""])


if __name__ == "__main__":
    print(sixteenth_pass())
