"""`estimate --explain` can be redone by hand: every arithmetic line is parsed from the printed table and its figures
recomputed from the numbers it prints (each printed figure carries the rounding of its last digit)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]

_BYTES = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
_SECONDS = {"µs": 1e-6, "ms": 1e-3, "s": 1.0}
_SIZE = r"([\d,.]+) (kB|MB|GB|TB)"
_TIME = r"([\d.]+) (µs|ms|s)"

CASES = [
    # tensor parallel 4 over NVSwitch: KV heads split, norms replicated, all-reduces in both phases
    ("--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "4", "--batch", "16", "--prompt-tokens", "8k"),
    # transformers eager: the host's dispatch sets the decode step
    ("--model", "llama-3.1-8b", "--gpu", "h100", "--profile", "hf", "--batch", "4", "--output-tokens", "256"),
    # sliding windows, and the whole prompt held in every layer right after an hf prefill
    ("--model", "gemma-2-9b", "--gpu", "h100", "--profile", "hf", "--batch", "2", "--prompt-tokens", "8k"),
    # multi-head latent attention over 8 GPUs: the latent is on every GPU whole
    ("--model", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--batch", "4", "--prompt-tokens", "4k",
     "--dtype", "fp8"),
    # transformers in a CUDA graph: the fixed cost counted per operation (profile hf-graph)
    ("--model", "llama-3.1-8b", "--gpu", "h200", "--profile", "hf-graph", "--batch", "8", "--output-tokens", "64"),
]


def _bytes(value: str, unit: str) -> tuple[float, float]:
    """A printed size as (bytes, half a unit of its last digit)."""
    decimals = len(value.split(".")[1]) if "." in value else 0
    scale = _BYTES[unit]
    return float(value.replace(",", "")) * scale, 0.5 * 10**-decimals * scale


def _seconds(value: str, unit: str) -> tuple[float, float]:
    decimals = len(value.split(".")[1]) if "." in value else 0
    return float(value) * _SECONDS[unit], 0.5 * 10**-decimals * _SECONDS[unit]


def _explain(cli: Cli, args: tuple[str, ...]) -> list[str]:
    result = cli("estimate", *args, "--explain", columns=1000)  # no wrapping: one line per note
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    return text[text.index("Arithmetic\n"):text.index("Assumptions\n")].splitlines()[1:]


def _check_kv(line: str) -> None:
    m = re.search(r"KV cache\[.+?\]: ([\d,]+) layers × ([\d,]+) tokens × (\d+) sequences × ([\d,]+) B/token/layer "
                  r"\((.+?) elements, (\w+)\) = " + _SIZE, line)
    assert m, line
    layers, tokens, sequences, per_token = (int(m.group(i).replace(",", "")) for i in range(1, 5))
    total, err = _bytes(m.group(7), m.group(8))
    assert abs(layers * tokens * sequences * per_token - total) <= err, line
    heads = re.fullmatch(r"(\d+) KV heads × \(K (\d+) \+ V (\d+)\)", m.group(5))
    latent = re.fullmatch(r"latent (\d+) \+ RoPE key (\d+)", m.group(5))
    if heads:
        elements = int(heads[1]) * (int(heads[2]) + int(heads[3]))
    else:
        assert latent, line
        elements = int(latent[1]) + int(latent[2])
    assert per_token == elements * {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1, "int8": 1}[m.group(6)], line
    split = re.search(r"; ÷ (\d+) \(KV heads split.*\) = " + _SIZE + " per GPU", line)
    if split:
        per_gpu, err_gpu = _bytes(split.group(2), split.group(3))
        assert abs(total / int(split.group(1)) - per_gpu) <= err + err_gpu, line


def _check_per_gpu(line: str) -> float:
    """The per-GPU sum and the weights' split; returns the printed per-GPU total in bytes."""
    body = line.split("per GPU: ", 1)[1]
    weights = re.match(r"weights " + _SIZE + r"(?: \(\(" + _SIZE + " − " + _SIZE + r"\) ÷ (\d+) \+ " + _SIZE + ")?",
                       body)
    assert weights, line
    if weights.group(3):
        (w, ew), (whole, e1), (rep, e2) = (_bytes(weights.group(i), weights.group(i + 1)) for i in (1, 3, 5))
        assert abs((whole - rep) / int(weights.group(7)) + rep - w) <= ew + e1 + e2, line
    terms = re.findall(r"(?:weights|KV|recurrent state|activations|overhead) " + _SIZE, body.split(" = ")[0]
                       if "((" not in body else re.sub(r" \(\(.*?GPU\)", "", body).split(" = ")[0])
    total = re.search(r" = " + _SIZE + " of ", re.sub(r" \(\(.*?GPU\)", "", body))
    assert total and terms, line
    values = [_bytes(v, u) for v, u in terms]
    per_gpu, err = _bytes(total.group(1), total.group(2))
    assert abs(sum(v for v, _ in values) - per_gpu) <= err + sum(e for _, e in values), line
    return per_gpu


def _check_expected(line: str) -> tuple[float, float]:
    """The rule that makes a phase's expected time; returns (expected, communication) in seconds."""
    m = re.search(r"max\(compute " + _TIME + ", weight reads " + _TIME + r"\)(.*?) = " + _TIME + " on the GPU", line)
    assert m, line
    (compute, e1), (weights, e2) = _seconds(m.group(1), m.group(2)), _seconds(m.group(3), m.group(4))
    added = [_seconds(v, u) for v, u in re.findall(r"\+ [^+]*? " + _TIME, m.group(5))]
    gpu, e_gpu = _seconds(m.group(6), m.group(7))
    assert abs(max(compute, weights) + sum(v for v, _ in added) - gpu) <= e1 + e2 + sum(e for _, e in added) + e_gpu
    host = re.search(r"host dispatch " + _TIME, line)
    comm = re.search(r"communication " + _TIME, line)
    final = re.search(r"→ " + _TIME + "$", line)
    assert final, line
    (h, eh) = _seconds(host.group(1), host.group(2)) if host else (0.0, 0.0)
    (c, ec) = _seconds(comm.group(1), comm.group(2)) if comm else (0.0, 0.0)
    expected, e_final = _seconds(final.group(1), final.group(2))
    bound = re.search(r"raised to the roofline bound " + _TIME, line)
    rebuilt = _seconds(bound.group(1), bound.group(2))[0] if bound else max(gpu, h) + c
    assert abs(rebuilt - expected) <= e_gpu + eh + ec + e_final, line
    return expected, c


@pytest.mark.parametrize("args", CASES, ids=lambda a: "-".join(a[1::2][:3]))
def test_explain_lines_add_up(cli: Cli, args: tuple[str, ...]) -> None:
    lines = _explain(cli, args)
    kv = [line for line in lines if line.strip().startswith("KV cache[")]
    assert kv
    for line in kv:
        _check_kv(line)
    per_gpu = _check_per_gpu(next(line for line in lines if "per GPU: weights" in line))
    prefill, prefill_comm = _check_expected(next(line for line in lines if "prefill expected" in line))
    decode, decode_comm = _check_expected(next(line for line in lines if "decode expected" in line))
    report = json.loads(cli("estimate", *args, "--format", "json").stdout)
    memory, time = report["memory"], report["time"]
    # the printed lines are the report's figures, to their printed digits
    assert abs(memory["per_gpu_bytes"] - per_gpu) <= 0.05e9
    assert abs(time["prefill_s"] - prefill) <= 0.005 and abs(time["decode_step_s"] - decode) <= 0.5e-4
    # communication_s: the prefill's all-reduces plus one decode step's (the two lines' figures)
    assert abs(time["communication_s"] - (prefill_comm + decode_comm)) <= 0.005 + 0.5e-4
    assert (time["communication_s"] > 0) == (report["workload"]["gpus"] > 1)


def test_kv_heads_replicated_beyond_their_count(cli: Cli) -> None:
    """8 KV heads over 16 GPUs: the cache splits 8 ways, each head on 2 GPUs."""
    lines = _explain(cli, ("--model", "llama-3.1-70b", "--system", "gb200-nvl72", "--gpus", "16", "--batch", "8"))
    line = next(line for line in lines if line.strip().startswith("KV cache["))
    assert "÷ 8 (KV heads split, each head on 2 of the 16 GPUs)" in line
    _check_kv(line)


def test_hf_prefill_keeps_the_whole_prompt_in_window_layers(cli: Cli) -> None:
    lines = _explain(cli, CASES[2])
    held = next(line for line in lines if "KV cache per GPU:" in line)
    m = re.search(r"KV cache per GPU: " + _SIZE + r", not the windowed .*?\(([\d,]+) layers × ([\d,]+) tokens × "
                  r"(\d+) sequences × ([\d,]+) B/token/layer\)", held)
    assert m, held
    value, err = _bytes(m.group(1), m.group(2))
    # 42 layers × 8,000 tokens × 2 sequences × 8,192 B = 5,505,024,000 B
    assert int(m.group(3)) * int(m.group(4).replace(",", "")) * int(m.group(5)) * int(m.group(6).replace(",", "")) \
        == 5_505_024_000
    assert abs(5_505_024_000 - value) <= err


def test_a_counted_family_s_fixed_cost_is_its_operations(cli: Cli) -> None:
    """hf-graph counts the kernels' floor per operation where the family's operations are counted: llama-3.1-8b's decode
    step dispatches 32 layers × 63 (grouped KV heads) + 48 outside them; the eager hf profile keeps the per-layer cost
    beside its host dispatch."""
    base = ("--model", "llama-3.1-8b", "--gpu", "h200", "--batch", "1", "--output-tokens", "8")
    graph = next(line for line in _explain(cli, (*base, "--profile", "hf-graph")) if "decode expected" in line)
    assert "2,064 operations' fixed cost" in graph and "layers' fixed cost" not in graph
    eager = next(line for line in _explain(cli, (*base, "--profile", "hf")) if "decode expected" in line)
    assert "32 layers' fixed cost" in eager and "operations' fixed cost" not in eager
