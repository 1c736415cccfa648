"""A seeded fuzz campaign over the command line: generated command lines and hostile files, run in-process.

Every case is a command line (any command, any option, valid or hostile values) plus the files it names, written
into a scratch folder. A case passes when the CLI keeps its promise:

- exit 0: something on stdout; JSON output parses with no NaN or infinity and no negative figure (a headroom may
  be negative: it says by how much a job does not fit);
- exit ≠ 0: nothing on stdout, and exactly one line on stderr that starts with ``error:``;
- never an exception escaping the CLI (a traceback), never more than `CASE_SECONDS` of CPU time (work that does
  not end) nor `WALL_SECONDS` of wall time (a wait that does not end);
- a file from earlier work (``taken.*``) named as an output is never replaced without ``--force``.

`tests/fuzz/test_campaign.py` runs a fast slice in CI; ``python -m lab.fuzz.campaign --cases 100000``
runs the long one and writes docs/reliability.md. The same seed always gives the same cases.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# A hang is unbounded work or an endless wait. Work is counted in the process's CPU time (user + system, the
# ITIMER_PROF clock), which other jobs on a shared machine do not inflate: at a load average of 8 on 2 cores a
# 3.5 s plan took 19-30 s of wall time and was filed as a hang (docs/reliability.md). A wait uses no CPU, so a
# wall-clock ceiling, well above any case's work times the slow-down of a loaded machine, catches it.
CASE_SECONDS = 20  # CPU seconds (the slowest valid command here takes ~4 s)
WALL_SECONDS = 300

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b", "gemma-3-1b", "qwen2.5-7b",
          "phi-3-mini", "gpt2", "bert-base", "falcon-7b", "qwen3-30b-a3b", "deepseek-v2-lite", "70b", "7.5e9", "13B"]
HOSTILE_MODELS = ["0b", "-3b", "1e400b", "9" * 5000, "qwen3-32b", "[/bold]x", "[red]llama[/red]", "~nosuchuser/x",
                  "a" * 5000, "", " ", "../../../../etc/passwd", "nan", "inf", "llama-3.1-8b\x00", "config.json"]
GPUS = ["h100", "a100", "h200", "rtx-4090", "l40s", "mi300x", "t4", "v100", "NVIDIA H100 80GB HBM3", "4090"]
HOSTILE_GPUS = ["h1000", "[/bold]", "[link=file:///etc]x[/link]", "", "x" * 5000, "NVIDIA", "\u202eh100"]
COUNTS = ["1", "2", "8", "64", "2048", "8k", "32Ki", "128k", "0", "-1", "1.0", "1.5", "1e3", "1e400", "nan", "inf",
          "-inf", "", "9" * 5000, "0x10", "\u0661\u0662", "8 k", "1_000", "3", "7", "1000000", "100000000000"]
DTYPES = ["bf16", "fp16", "fp32", "fp8", "int8", "int4", "awq-int4", "gptq-int4", "nf4", "mxfp4", "nvfp4", "q4_k_m",
          "q8_0", "int3", "", "[red]x"]
ENUM_VALUES = {
    "--logits": ["last", "all", "some"], "--profile": ["optimized", "hf", "fast"], "--units": ["gb", "gib", "mb"],
    "--mla-cache": ["latent", "decompressed", "foo"], "--format": ["table", "json", "csv", "xml"],
    "--precision": ["fp32", "amp-bf16", "amp-fp16", "bf16", "fp64"],
    "--optimizer": ["adamw", "adamw-fused", "adam-8bit", "sgd", "lion", "adafactor", "adam9"],
    "--recompute": ["none", "selective", "full", "half"], "--attention": ["sdpa", "flash", "eager", "x"],
    "--fsdp": ["full", "grad-op", "none"], "--zero": ["0", "1", "2", "3", "5", "1.0", "-1", ""],
    "--sort": ["cost", "cards", "throughput", "speed"],
}
INFER_COUNTS = ["--batch", "--prompt-tokens", "--output-tokens", "--gpus", "--group-size"]
TRAIN_COUNTS = ["--batch", "--seq-len", "--grad-accum", "--dp", "--tp", "--pp", "--lora-rank"]
PLAN_NUMBERS = ["--max-ttft-s", "--max-tpot-s"]
NUMBERS = ["1", "0.5", "0", "-1", "nan", "inf", "1e400", "1e-400", "", "x", "0.05"]


@dataclass(frozen=True)
class Case:
    """One command line; ``{dir}`` in an argument is the case's scratch folder, where ``files`` are written."""

    args: tuple[str, ...]
    files: tuple[tuple[str, bytes], ...] = ()


@dataclass
class Outcome:
    case: Case
    code: int
    stdout: str
    stderr: str
    seconds: float
    escaped: str | None = None  # the exception that escaped the CLI, if one did
    cpu_seconds: float = 0.0  # this process's CPU time (user + system) during the case
    problems: list[str] = field(default_factory=list)


def _nested(depth: int) -> bytes:
    return ("{\"a\":" * depth + "1" + "}" * depth).encode()


def hostile_configs() -> list[tuple[str, bytes]]:
    """config.json files a user might pass: broken, absurd or adversarial (name, content)."""
    llama = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
             "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}

    def with_(**update: Any) -> bytes:
        return json.dumps({**llama, **update}).encode()

    return [
        ("ok", with_()),
        ("markup-name", with_(_name_or_path="[/bold][red]evil[/red]")),
        ("type-list", with_(model_type=["llama"])),
        ("type-missing", json.dumps({k: v for k, v in llama.items() if k != "model_type"}).encode()),
        ("huge-int", with_().replace(b'"hidden_size": 4096', b'"hidden_size": ' + b"9" * 5000)),
        ("huge-float", with_(intermediate_size=1e300)),
        ("deep-layers", with_(num_hidden_layers=10_000_000)),
        ("negative", with_(num_attention_heads=-8)),
        ("zero-heads", with_(num_attention_heads=0)),
        ("float-heads", with_(num_attention_heads=32.5)),
        ("string-size", with_(hidden_size="4096")),
        ("bool-size", with_(hidden_size=True)),
        ("nan", b'{"model_type": "llama", "hidden_size": NaN}'),
        ("nested", _nested(100_000)),
        ("array", b"[1, 2, 3]"),
        ("empty", b""),
        ("not-utf8", b'{"model_type": "\xff\xfe"}'),
        ("unknown-family", with_(model_type="brand-new-arch")),
        ("text-config", json.dumps({"model_type": "llava", "text_config": {"model_type": ["x"]}}).encode()),
    ]


def hostile_yaml() -> list[tuple[str, bytes]]:
    """YAML files for --prices and --calibration: broken, absurd or adversarial (name, content)."""
    return [
        ("list", b"- 1\n- 2\n"),
        ("nan", b"cards:\n  h100: {price_usd: .nan}\n"),
        ("inf", b"electricity_usd_per_kwh: .inf\n"),
        ("tag", b"!!python/object/apply:os.system ['echo owned']\n"),
        ("bomb", b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                 b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                 b"e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"),
        ("duplicate", b"a: 1\na: 2\n"),
        ("not-yaml", b"{{{{"),
        ("not-utf8", b"a: \xff\n"),
        ("huge", b"a: " + b"9" * 5000 + b"\n"),
        ("calibration-nan", b"schema_version: 1\ngpus:\n  NVIDIA H200:\n    gpu: NVIDIA H200\n"
                            b"    bandwidth_efficiency: .nan\n"),
        ("empty", b""),
    ]


def _pick(rng: random.Random, valid: Sequence[str], hostile: Sequence[str], p_hostile: float = 0.2) -> str:
    return rng.choice(hostile) if rng.random() < p_hostile else rng.choice(valid)


def _model_arg(rng: random.Random, files: list[tuple[str, bytes]]) -> str:
    roll = rng.random()
    if roll < 0.15:
        name, content = rng.choice(hostile_configs())
        files.append((f"{name}.json", content))
        return "{dir}/" + f"{name}.json"
    return _pick(rng, MODELS, HOSTILE_MODELS)


def _options(rng: random.Random, pool: Sequence[str], values: Sequence[str], k: int) -> list[str]:
    out: list[str] = []
    for option in rng.sample(list(pool), k=min(k, len(pool))):
        out += [option, rng.choice(values)]
    return out


def _enums(rng: random.Random, names: Sequence[str], k: int) -> list[str]:
    out: list[str] = []
    for option in rng.sample(list(names), k=min(k, len(names))):
        out += [option, rng.choice(ENUM_VALUES[option])]
    return out


def _output_target(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    target = rng.choice([[], [], ["-o", "{dir}/out.csv"], ["-o", "{dir}/missing/out.csv"], ["-o", "{dir}"],
                         ["-o", "/proc/version"], ["--plot", "{dir}/chart.png"], ["--plot", "{dir}/chart.bmp"],
                         ["--plot", "{dir}/missing/chart.png"], ["-o", "{dir}/taken.csv"],
                         ["--plot", "{dir}/taken.png"]])
    if target and "taken" in target[1]:  # a file from earlier work: refused in one line, replaced with --force
        files.append((target[1].removeprefix("{dir}/"), b"earlier work\n"))
        if rng.random() < 0.5:
            target.insert(rng.choice([0, 2]), "--force")
    return target


def _estimate(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    args = ["estimate", "--model", _model_arg(rng, files), "--gpu", _pick(rng, GPUS, HOSTILE_GPUS)]
    if rng.random() < 0.6:
        args += ["--dtype", rng.choice(DTYPES)]
    args += _options(rng, INFER_COUNTS, COUNTS, rng.randint(0, 3))
    args += _enums(rng, ["--logits", "--profile", "--units", "--mla-cache", "--format"], rng.randint(0, 3))
    if rng.random() < 0.1:
        args.append("--explain")
    if rng.random() < 0.1:
        name, content = rng.choice(hostile_yaml())
        files.append((f"cal-{name}.yaml", content))
        args += ["--calibration", "{dir}/" + f"cal-{name}.yaml"]
    if rng.random() < 0.1:
        args += rng.choice([["--plot", "{dir}/m.png"], ["--plot", "{dir}/m.txt"], ["--plot", "{dir}/no/m.png"]])
    return args


def _train(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    args = ["estimate", "--mode", "train", "--model", _model_arg(rng, files), "--gpu", _pick(rng, GPUS, HOSTILE_GPUS)]
    args += _options(rng, TRAIN_COUNTS, COUNTS, rng.randint(0, 3))
    args += _enums(rng, ["--precision", "--optimizer", "--recompute", "--attention", "--fsdp", "--zero", "--format",
                         "--units"], rng.randint(0, 3))
    if rng.random() < 0.15:
        args.append("--qlora")
    if rng.random() < 0.1:
        args.append("--sequence-parallel")
    if rng.random() < 0.1:  # an inference-only option in training mode
        args += rng.choice([["--prompt-tokens", "512"], ["--gpus", "8"], ["--logits", "all"]])
    return args


def _plan(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    args = ["plan", "--model", _model_arg(rng, files)]
    goal = rng.choice([["--concurrency", rng.choice(COUNTS)], ["--target-tokens-per-s", rng.choice(NUMBERS + COUNTS)],
                       [], ["--concurrency", "8", "--max-ttft-s", rng.choice(NUMBERS)]])
    args += goal
    args += _options(rng, ["--prompt-tokens", "--output-tokens"], COUNTS, rng.randint(0, 2))
    if rng.random() < 0.5:
        args += ["--gpus", ",".join(rng.sample(GPUS[:8], k=rng.randint(1, 3)))]
    args += _enums(rng, ["--sort", "--format", "--profile"], rng.randint(0, 2))
    if rng.random() < 0.15:
        name, content = rng.choice(hostile_yaml())
        files.append((f"prices-{name}.yaml", content))
        args += ["--prices", "{dir}/" + f"prices-{name}.yaml"]
    return args + _output_target(rng, files)


def _sweep(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    models = ",".join(rng.sample(MODELS[:12], k=rng.randint(1, 2)))
    args = ["sweep", "--model", models, "--gpu", ",".join(rng.sample(GPUS[:8], k=rng.randint(1, 2)))]
    for option in ("--batch", "--prompt-tokens", "--output-tokens", "--gpus"):
        if rng.random() < 0.5:
            args += [option, ",".join(rng.choice(COUNTS[:10]) for _ in range(rng.randint(1, 3)))]
    args += _enums(rng, ["--format", "--profile"], rng.randint(0, 1))
    target = _output_target(rng, files)
    return args + (target or ["-o", "{dir}/grid.csv"])


def _catalog(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    del files
    return rng.choice([["gpus"], ["models"], ["gpus", "show", _pick(rng, GPUS, HOSTILE_GPUS, 0.4)],
                       ["models", "show", _pick(rng, MODELS, HOSTILE_MODELS, 0.4)], ["gpus", "--format", "json"],
                       ["--help"], ["estimate", "--help"], ["no-such-command"], []])


GENERATORS = ((_estimate, 0.45), (_train, 0.25), (_plan, 0.12), (_sweep, 0.08), (_catalog, 0.10))


def generate(seed: int, count: int) -> Iterator[Case]:
    """``count`` cases from ``seed``: the same seed gives the same cases on every machine."""
    rng = random.Random(seed)
    makers = [g for g, _ in GENERATORS]
    weights = [w for _, w in GENERATORS]
    for _ in range(count):
        files: list[tuple[str, bytes]] = []
        args = rng.choices(makers, weights)[0](rng, files)
        yield Case(tuple(args), tuple(dict(files).items()))


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    clock = "of CPU time" if signum == signal.SIGPROF else "of wall time"
    limit = CASE_SECONDS if signum == signal.SIGPROF else WALL_SECONDS
    raise _Timeout(f"more than {limit} s {clock}")


def run(case: Case, scratch: Path) -> Outcome:
    """Run ``case`` through `estimator`'s own entry point, in-process, with its files under ``scratch``."""
    from estimator.cli.main import main

    scratch.mkdir(parents=True, exist_ok=True)
    for name, content in case.files:
        (scratch / name).write_bytes(content)
    args = [a.replace("{dir}", str(scratch)) for a in case.args]
    out, err = io.StringIO(), io.StringIO()
    code, escaped = 0, None
    argv = sys.argv
    sys.argv = ["estimator", *args]
    previous = signal.signal(signal.SIGALRM, _alarm), signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, CASE_SECONDS)
    signal.alarm(WALL_SECONDS)
    start, cpu_start = time.perf_counter(), time.process_time()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except _Timeout as timeout:
        escaped = f"hang: {timeout}"
    except BaseException as error:  # any escape is the finding
        escaped = f"{type(error).__name__}: {str(error)[:200]}"
    finally:
        signal.alarm(0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGALRM, previous[0])
        signal.signal(signal.SIGPROF, previous[1])
        sys.argv = argv
    outcome = Outcome(case, code, out.getvalue(), err.getvalue(), time.perf_counter() - start, escaped,
                      time.process_time() - cpu_start)
    outcome.problems = problems(outcome)
    if "--force" not in case.args:  # earlier work is never replaced unasked
        outcome.problems += [f"{name} replaced without --force" for name, content in case.files
                             if name.startswith("taken.") and (scratch / name).read_bytes() != content]
    return outcome


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} in JSON")


def _bad_numbers(value: Any, path: str = "") -> list[str]:
    """Negative figures in a parsed JSON document (headroom and signed gaps excepted)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _bad_numbers(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _bad_numbers(v, f"{path}[{i}]")]
    signed = ("headroom", "gap", "error", "delta", "_vs_", "residual")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            return [f"non-finite {path}"]
        if value < 0 and not any(s in path for s in signed):
            return [f"negative {path} = {value}"]
    return []


def problems(o: Outcome) -> list[str]:
    """Every way ``o`` breaks the CLI's promise (empty when it keeps it)."""
    found = []
    if o.escaped is not None:  # a hang is its own kind: counting it as a traceback hid what the run found
        found.append(o.escaped if o.escaped.startswith("hang:") else f"traceback: {o.escaped}")
    if "Traceback (most recent call last)" in o.stdout + o.stderr:
        found.append("traceback printed")
    if o.escaped is not None:
        return found
    if o.code == 0:
        found += _output_problems(o)
    else:
        if o.stdout.strip():
            found.append("partial stdout on error")
        lines = [line for line in o.stderr.splitlines() if line.strip()]
        if len(lines) != 1 or not lines[0].startswith("error: "):
            found.append(f"error is not one 'error:' line: {o.stderr[:200]!r}")
    return found


def _output_problems(o: Outcome) -> list[str]:
    help_or_list = not o.case.args or "--help" in o.case.args
    if not o.stdout.strip() and not help_or_list and "-o" not in o.case.args:
        return ["exit 0 with nothing on stdout"]
    text = o.stdout.strip()
    if text[:1] in ("{", "["):
        try:
            return _bad_numbers(json.loads(text, parse_constant=_reject_constant))
        except ValueError as error:
            return [f"JSON does not parse strictly: {str(error)[:120]}"]
    lowered = f" {o.stdout.lower()} "
    return [f"'{word.strip()}' in output" for word in (" nan ", " inf ", "nan%", "inf%") if word in lowered]
