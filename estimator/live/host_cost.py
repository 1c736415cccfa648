"""The host's cost per dispatched operation, which `estimator calibrate` measures and eager profiles' host floor uses.

An eager PyTorch runtime issues its kernels one by one from Python: where the GPU keeps up, a step takes as long as
the host needs to dispatch its aten operations (`estimator.model.timing.host_dispatch_s`). That cost is a state of
the machine: on one H200 host a probe of 300 in-place adds read 7.3 and 10.4 µs per operation, switching between
the two from one case to the next (tests/data/measured/random/h200-2026-12-01-seed3.jsonl, ``host_op_*``), and the
shipped `hf` profile's 16.09 µs per counted operation was fitted on another host's rows. So it is measured here,
two ways:

- ``bare_op_s``: the median seconds per in-place add on a one-element device tensor, issued back to back (dispatch
  and launch, no GPU work to wait for) — the probe `lab/measure/random_architectures.py` writes into every row.
- ``transformers_op_s``: the marginal host seconds per aten operation of a transformers Llama layer (random weights,
  width 64, 2 and 10 layers): the difference of the host issue times of a 10-layer and a 2-layer model over the
  difference of the operations they dispatch (counted with a ``TorchDispatchMode``, as the `hf` profile's
  ``eager_ops_per_layer`` were), for a short prefill forward and a static-cache decode step; the mean of the two.
  Python's work between operations (module calls, transformers' glue) is what a counted operation costs beyond a
  bare launch, so this is the figure the profile's ``host_per_op_s`` means, measured rather than scaled.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from estimator.live.device import _cpu, _device, free_memory, require_cuda, require_transformers, sync

# A tiny Llama: every layer dispatches what a full-size one does (the operations do not depend on the width), and
# its kernels finish faster than the host issues them, so the host issue time is the dispatch cost alone.
TINY_LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512, "max_position_embeddings": 256,
              "rms_norm_eps": 1e-5, "tie_word_embeddings": False}
LAYERS = (2, 10)
PREFILL_TOKENS = 8
CACHE_TOKENS = 64


def count_ops(fn: Callable[[], Any]) -> int:
    """aten operations one call of ``fn`` dispatches (TorchDispatchMode): what the host launches one by one."""
    from torch.utils._python_dispatch import TorchDispatchMode  # type: ignore[import-not-found,unused-ignore]

    class Counter(TorchDispatchMode):  # type: ignore[misc,no-untyped-call,unused-ignore]
        ops = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            Counter.ops += 1
            return func(*args, **(kwargs or {}))

    with Counter():  # type: ignore[no-untyped-call,unused-ignore]
        fn()
    return Counter.ops


def host_issue_s(fn: Callable[[], Any]) -> float:
    """Seconds the host takes to issue ``fn`` from an idle GPU (the GPU's work is waited for afterwards)."""
    sync()
    began = time.perf_counter()
    fn()
    spent = time.perf_counter() - began
    sync()
    return spent


def bare_op_s(ops: int = 300, repeats: int = 5) -> float | None:
    """Median seconds per in-place add of ``ops`` issued back to back on a one-element device tensor; None where
    the device refuses (a CUDA error)."""
    t = require_cuda()
    try:
        x = t.zeros(1, device=_device())
        timings = []
        for _ in range(repeats):
            sync()
            began = time.perf_counter()
            for _ in range(ops):
                x.add_(1)
            timings.append((time.perf_counter() - began) / ops)
        sync()
        return sorted(timings)[repeats // 2]
    except RuntimeError:
        return None


def _steps(layers: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(prefill forward, static-cache decode step) of the tiny Llama at ``layers`` depth."""
    transformers = require_transformers()
    t = require_cuda()
    fields = {k: v for k, v in TINY_LLAMA.items() if k != "model_type"}
    config = transformers.AutoConfig.for_model("llama", **fields, num_hidden_layers=layers)
    config._attn_implementation = "sdpa"  # as estimator.live.measure.build_model (not imported: lean imports this)
    dtype = t.float32 if _cpu() else t.bfloat16
    with t.device(_device()):
        model = transformers.AutoModelForCausalLM.from_config(config).to(dtype).eval()
    ids = t.randint(0, config.vocab_size, (1, PREFILL_TOKENS), device=_device())
    cache = transformers.StaticCache(config=config, max_cache_len=CACHE_TOKENS)
    token = t.randint(0, config.vocab_size, (1, 1), device=_device())
    position = t.tensor([CACHE_TOKENS // 2], device=_device())

    def prefill() -> Any:
        return model(input_ids=ids, use_cache=False, logits_to_keep=1)

    def decode() -> Any:
        return model(input_ids=token, past_key_values=cache, cache_position=position, use_cache=True,
                     position_ids=position.expand(1, 1))

    return prefill, decode


def transformers_op_s(repeats: int = 15) -> dict[str, float]:
    """Marginal host seconds per aten operation of a transformers Llama layer, for prefill and decode (medians of
    ``repeats`` interleaved issue times, so a change of the host's speed during the measurement shows in both
    depths alike), their mean as ``host_per_op_s``, and the operations counted."""
    t = require_cuda()
    steps = {layers: _steps(layers) for layers in LAYERS}
    out: dict[str, float] = {}
    with t.inference_mode():
        for index, kind in enumerate(("prefill", "decode")):
            ops: dict[int, int] = {}
            times: dict[int, list[float]] = {}
            for layers, pair in steps.items():
                pair[index]()  # warm-up: first-call allocations and kernel selection
                ops[layers] = count_ops(pair[index])
                times[layers] = []
            for _ in range(repeats):
                for layers, pair in steps.items():
                    times[layers].append(host_issue_s(pair[index]))
            short, long = LAYERS
            extra_ops = ops[long] - ops[short]
            spent = statistics.median(times[long]) - statistics.median(times[short])
            out[f"{kind}_ops_per_layer"] = extra_ops / (long - short)
            out[f"{kind}_op_s"] = max(spent, 0.0) / extra_ops
    del steps
    free_memory()
    out["host_per_op_s"] = (out["prefill_op_s"] + out["decode_op_s"]) / 2
    return out
