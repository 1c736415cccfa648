"""Hostile inputs of the fuzz campaign (tests/fuzz/campaign.py): config.json files (broken, absurd, partial), YAML
files, spec files for a specs folder, the texts and pickles `estimator oom` reads. Each is ``(name, content)``.

A malicious pickle here would, if unpickled by a plain `pickle.load`, create the file `PICKLE_MARKER` in the
working folder; the campaign runs each case in its scratch folder and counts that file, if it appears, as code run
from a file.
"""

from __future__ import annotations

import builtins
import json
import os
import pickle
import random
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

from estimator.catalog.files import MAX_CONFIG_BYTES

PICKLE_MARKER = "pickle-ran"  # created, relative to the working folder, by any exploit below that runs
OOM_DATA = Path(__file__).resolve().parent.parent / "data" / "oom"  # captured failures (tests/data/oom/README.md)
CAPTURES = ("batch", "eager-attention", "fragmentation", "logits", "optimizer-step")
LLAMA = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}
# the fields that set a Llama's size: a config without one of them is partial (removing intermediate_size moved
# Llama-3.1-8B's count by -16 %, num_key_value_heads its KV cache 4 x, when they were filled in silently)
SIZE_FIELDS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
               "vocab_size")


def _nested(depth: int) -> bytes:
    return ("{\"a\":" * depth + "1" + "}" * depth).encode()


def bomb(indent: str = "", levels: int = 9) -> str:
    """A "billion laughs" YAML body: ``levels`` anchors, each a list of nine aliases to the one before."""
    lines = [f"{indent}a0: &a0 [{', '.join(['lol'] * 9)}]"]
    lines += [f"{indent}a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


@cache
def hostile_configs() -> tuple[tuple[str, bytes], ...]:
    """config.json files a user might pass: broken, absurd or adversarial (name, content)."""
    def with_(**update: Any) -> bytes:
        return json.dumps({**LLAMA, **update}).encode()

    return (
        ("ok", with_()),
        ("markup-name", with_(_name_or_path="[/bold][red]evil[/red]")),
        ("type-list", with_(model_type=["llama"])),
        ("type-missing", json.dumps({k: v for k, v in LLAMA.items() if k != "model_type"}).encode()),
        ("huge-int", with_().replace(b'"hidden_size": 4096', b'"hidden_size": ' + b"9" * 5000)),
        ("huge-float", with_(intermediate_size=1e300)),
        ("deep-layers", with_(num_hidden_layers=10_000_000)),
        ("negative", with_(num_attention_heads=-8)),
        ("zero-heads", with_(num_attention_heads=0)),
        ("float-heads", with_(num_attention_heads=32.5)),
        ("string-size", with_(hidden_size="4096")),
        ("bool-size", with_(hidden_size=True)),
        ("null-size", with_(hidden_size=None)),
        ("nan", b'{"model_type": "llama", "hidden_size": NaN}'),
        ("nested", _nested(100_000)),
        ("array", b"[1, 2, 3]"),
        ("empty", b""),
        ("not-utf8", b'{"model_type": "\xff\xfe"}'),
        ("unknown-family", with_(model_type="brand-new-arch")),
        ("text-config", json.dumps({"model_type": "llava", "text_config": {"model_type": ["x"]}}).encode()),
        ("huge-file", with_(padding="x" * MAX_CONFIG_BYTES)),  # past the ceiling of a config.json (16 MiB)
        *partial_configs(),
    )


def partial_configs() -> tuple[tuple[str, bytes], ...]:
    """Configs that lack a field that sets the model's size: refused, or answered with a warning naming it."""
    out = [("partial-type-only", b'{"model_type": "llama"}'), ("partial-empty-object", b"{}")]
    out += [(f"partial-no-{name}", json.dumps({k: v for k, v in LLAMA.items() if k != name}).encode())
            for name in SIZE_FIELDS]
    for family in ("mistral", "qwen2", "gemma2", "mixtral", "deepseek_v3", "phi3"):
        out.append((f"partial-{family}-type-only", json.dumps({"model_type": family}).encode()))
    return tuple(out)


@cache
def hostile_yaml() -> tuple[tuple[str, bytes], ...]:
    """YAML files for --prices and --calibration: broken, absurd or adversarial (name, content)."""
    return (
        ("list", b"- 1\n- 2\n"),
        ("nan", b"cards:\n  h100: {price_usd: .nan}\n"),
        ("inf", b"electricity_usd_per_kwh: .inf\n"),
        ("tag", b"!!python/object/apply:os.system ['touch " + PICKLE_MARKER.encode() + b"']\n"),
        ("bomb", bomb().encode()),
        ("self-anchor", b"a: &a [1, *a]\n"),
        ("deep", b"a: " + b"[" * 200 + b"]" * 200 + b"\n"),
        ("duplicate", b"a: 1\na: 2\n"),
        ("not-yaml", b"{{{{"),
        ("not-utf8", b"a: \xff\n"),
        ("huge", b"a: " + b"9" * 5000 + b"\n"),
        ("calibration-nan", b"schema_version: 1\ngpus:\n  NVIDIA H200:\n    gpu: NVIDIA H200\n"
                            b"    bandwidth_efficiency: .nan\n"),
        ("empty", b""),
    )


REFUSED_SPECS = (0, 3, 6, 7)  # the kinds of `spec_file` no reader accepts: a bomb, a huge number, a loop, garbage


def spec_file(rng: random.Random, original: str, kinds: tuple[int, ...] = tuple(range(9))) -> bytes:
    """A spec file of a specs folder made hostile: a bomb under an ignored key, a list, NaN, a huge number, a Python
    tag, nesting, a self-referring anchor, garbage, or the file cut short (``original`` is the shipped text), one
    of ``kinds`` (the index of each in that order)."""
    kind = rng.choice(kinds)
    if kind == 0:
        if "\nconfig:\n" in original:  # inside a model's config, where the reader ignores unknown keys
            return original.replace("\nconfig:\n", "\nconfig:\n  ignored_by_the_reader:\n" + bomb("    "), 1).encode()
        return (original + "ignored_by_the_reader:\n" + bomb("  ")).encode()
    return [b"- 1\n- 2\n", (original + "extra_figure: .nan\n").encode(),
            (original + "extra_figure: " + "9" * 5000 + "\n").encode(),
            (original + "extra: !!python/object/apply:os.system ['touch " + PICKLE_MARKER + "']\n").encode(),
            (original + "extra: " + "[" * 200 + "]" * 200 + "\n").encode(), b"a: &a [1, *a]\n", b"\xff\xfe{{",
            original[:rng.randrange(max(1, len(original)))].encode()][kind - 1]


class _Exploit:
    """Pickled as a call of ``target(*args)``: what an unsafe unpickler would run."""

    def __init__(self, target: Any, *args: Any) -> None:
        self.target, self.args = target, args

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.target, self.args)


def _exploits() -> list[_Exploit]:
    marker = PICKLE_MARKER
    return [_Exploit(os.system, f"touch {marker}"), _Exploit(builtins.open, marker, "w"),
            _Exploit(builtins.exec, f"open({marker!r}, 'w').close()"),
            _Exploit(builtins.eval, f"open({marker!r}, 'w')"), _Exploit(subprocess.call, ["touch", marker])]


def _snapshot(size: Any = 2**30, **entry: Any) -> dict[str, Any]:
    return {"segments": [{"total_size": 2**31, "allocated_size": 2**30, "blocks": [{"state": "inactive",
                                                                                      "size": 2**20}]}],
            "device_traces": [[{"action": "oom", "size": size, **entry}]]}


@cache
def hostile_pickles() -> tuple[tuple[str, bytes], ...]:
    """Snapshots `oom` reads: captured ones, exploits at every protocol and at every place in a snapshot, odd
    opcodes, shared-reference bombs, absurd sizes, deep nesting (name, content)."""
    out = [(f"{c}.pickle", (OOM_DATA / f"{c}.snapshot.pickle").read_bytes()) for c in CAPTURES]
    for index, exploit in enumerate(_exploits()):
        for protocol in (0, 2, 4, 5):
            out.append((f"exploit-{index}-p{protocol}.pickle", pickle.dumps(exploit, protocol=protocol)))
        out.append((f"exploit-{index}-in-size.pickle", pickle.dumps(_snapshot(size=exploit))))
        out.append((f"exploit-{index}-in-frames.pickle", pickle.dumps(_snapshot(frames=[exploit]))))
        out.append((f"exploit-{index}-as-segments.pickle", pickle.dumps({"segments": exploit})))
    marker = PICKLE_MARKER.encode()
    out += [
        ("global.pickle", b"\x80\x02cos\nsystem\n(S'touch " + marker + b"'\ntR."),
        ("global-p0.pickle", b"cos\nsystem\n(S'touch " + marker + b"'\ntR."),
        ("inst.pickle", b"\x80\x02(S'touch " + marker + b"'\nios\nsystem\n."),
        ("stack-global.pickle", b"\x80\x04\x8c\x02os\x8c\x06system\x93\x8c" + bytes([6 + len(marker)]) + b"touch "
         + marker + b"\x85R."),
        ("persistent.pickle", b"\x80\x02Pboom\n."),
        ("ext.pickle", b"\x80\x02\x82\x01."),
        ("build.pickle", b"\x80\x02}q\x00}q\x01b."),
        ("long4.pickle", b"\x80\x02\x8b" + (200_000).to_bytes(4, "little") + b"\x7f" * 200_000 + b"."),
        ("binbytes-past-end.pickle", b"\x80\x04B" + (1 << 31).to_bytes(4, "little") + b"x."),
        ("frame-past-end.pickle", b"\x80\x04\x95" + (1 << 40).to_bytes(8, "little") + b"."),
        ("empty-stack.pickle", b"\x80\x02R."),
        ("truncated.pickle", b"\x80\x04"),
        ("shared-segments.pickle", pickle.dumps({"segments": [_snapshot()["segments"][0]] * 3000,
                                                 "device_traces": [[{"action": "oom", "size": 1}]]})),
        ("shared-traces.pickle", pickle.dumps({"segments": [], "device_traces": [[{"action": "oom", "size": 1}]
                                                                                  * 3000] * 3000})),
        ("deep.pickle", _deep_list(100_000)),
        ("recursive.pickle", pickle.dumps(_recursive())),
        ("no-snapshot.pickle", pickle.dumps([1, 2, 3])),
    ]
    for name, size in (("negative", -5), ("huge", 10**29), ("nan", float("nan")), ("inf", float("inf")),
                       ("fraction", 1.5), ("bool", True), ("text", "1 GiB"), ("zero", 0), ("none", None),
                       ("big-int", 2**64), ("ten-thousand-digits", 10**10_000)):
        out.append((f"size-{name}.pickle", pickle.dumps(_snapshot(size=size))))
        out.append((f"free-{name}.pickle", pickle.dumps(_snapshot(device_free=size))))
        out.append((f"segment-{name}.pickle", pickle.dumps({"segments": [{"total_size": size, "blocks": []}]})))
    return tuple(out)


def _deep_list(depth: int) -> bytes:
    """``{"segments": [[[…]]]}`` nested ``depth`` lists deep, written opcode by opcode (pickle.dumps recurses)."""
    return b"\x80\x02}X\x08\x00\x00\x00segments" + b"]" * depth + b"a" * (depth - 1) + b"s."


def _recursive() -> dict[str, Any]:
    loop: list[Any] = []
    loop.append(loop)
    snap = _snapshot()
    snap["segments"].append({"total_size": 1, "blocks": loop})
    snap["device_traces"].append(loop)
    return snap


NUMBER_SWAPS = ("1e29", "-5", "NaN", "inf", "9" * 400, "0", "0.00", "18446744073709551616", "-0", "1,024",
                "99999999999999999999999")
UNIT_SWAPS = ("GiB", "MiB", "KiB", "TiB", "EiB", "B", "XiB", "gib", "")


def oom_text(rng: random.Random) -> bytes:
    """What a failed job printed (the message, memory_summary(), nvidia-smi of a captured failure, in any order),
    made odd: a figure swapped for an absurd one, a unit changed, the text cut, repeated, or junk added."""
    capture = rng.choice(CAPTURES)
    parts = [(OOM_DATA / f"{capture}.{part}.txt").read_text(encoding="utf-8")
             for part in rng.sample(("message", "summary", "nvidia-smi"), k=rng.randint(1, 3))]
    text = "\n".join(parts)
    for _ in range(rng.randint(0, 3)):
        text = _mutated(rng, text)
    return text.encode("utf-8", errors="surrogateescape")


def _mutated(rng: random.Random, text: str) -> str:
    import re

    kind = rng.randrange(7)
    numbers = list(re.finditer(r"\d+(\.\d+)?", text))
    if kind <= 1 and numbers:
        hit = rng.choice(numbers)
        return text[:hit.start()] + rng.choice(NUMBER_SWAPS) + text[hit.end():]
    if kind == 2:
        units = list(re.finditer(r"GiB|MiB|KiB", text))
        if units:
            hit = rng.choice(units)
            return text[:hit.start()] + rng.choice(UNIT_SWAPS) + text[hit.end():]
    if kind == 3:
        return text[:rng.randrange(len(text) + 1)]
    if kind == 4:
        return text * rng.choice((2, 3, 50))
    if kind == 5:
        junk = rng.choice(("\x1b[31m", "[bold]", "\u202e", "\x00", "RuntimeError: CUDA error: an illegal memory access",
                           "CUDA out of memory. Tried to allocate " + "9" * 5000 + " GiB",
                           "CUDA out of memory. Tried to allocate " * 20_000))
        at = rng.randrange(len(text) + 1)
        return text[:at] + junk + text[at:]
    return ""
