"""The command lines of the fuzz campaign (tests/fuzz/campaign.py), one generator per subcommand: `estimate` in
both modes, `plan`, `sweep`, `oom`, the catalogs (`gpus`, `models`, `systems`, `show`), `schema`, the commands that
need a GPU (`gpu`, `monitor`, `calibrate`, `validate`: refused in one line on a machine without one), `serve`'s
refusals, and any of them over a specs folder (``--specs-dir``) with one hostile spec file. Each generator returns
the arguments and appends the files they name, ``(name, content)``, to ``files``; ``{dir}`` is the case's scratch
folder, ``{dir}/specs`` a copy of the shipped specs in it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import cache

from tests.fuzz.hostile import REFUSED_SPECS, hostile_configs, hostile_pickles, hostile_yaml, oom_text, spec_file

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b", "gemma-3-1b", "qwen2.5-7b",
          "phi-3-mini", "gpt2", "bert-base", "falcon-7b", "qwen3-30b-a3b", "deepseek-v2-lite", "70b", "7.5e9", "13B"]
HOSTILE_MODELS = ["0b", "-3b", "1e400b", "9" * 5000, "qwen3-32b", "[/bold]x", "[red]llama[/red]", "~nosuchuser/x",
                  "a" * 5000, "", " ", "../../../../etc/passwd", "nan", "inf", "llama-3.1-8b\x00", "config.json"]
SYSTEMS = ["hgx-h100", "hgx-a100", "gb200-nvl72", "mi300x-platform", "pcie-l40s", "hgx-b200"]
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


def estimate(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
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


def train(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
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


def plan(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    args = ["plan", "--model", _model_arg(rng, files)]
    goal = rng.choice([["--concurrency", rng.choice(COUNTS)], ["--target-tokens-per-s", rng.choice(NUMBERS + COUNTS)],
                       [], ["--concurrency", "8", "--max-ttft-s", rng.choice(NUMBERS)]])
    args += goal
    args += _options(rng, ["--prompt-tokens", "--output-tokens"], COUNTS, rng.randint(0, 2))
    if rng.random() < 0.5:
        args += ["--gpus", ",".join(rng.sample(GPUS[:8], k=rng.randint(1, 3)))]
    args += _options(rng, ["--step-tokens", "--max-nodes"], [*COUNTS, "1e17", "4096", "101m"],
                     rng.choice((0, 0, 0, 1)))
    args += _enums(rng, ["--sort", "--format", "--profile"], rng.randint(0, 2))
    if rng.random() < 0.15:
        name, content = rng.choice(hostile_yaml())
        files.append((f"prices-{name}.yaml", content))
        args += ["--prices", "{dir}/" + f"prices-{name}.yaml"]
    return args + _output_target(rng, files)


def sweep(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    models = ",".join(rng.sample(MODELS[:12], k=rng.randint(1, 2)))
    args = ["sweep", "--model", models, "--gpu", ",".join(rng.sample(GPUS[:8], k=rng.randint(1, 2)))]
    for option in ("--batch", "--prompt-tokens", "--output-tokens", "--gpus"):
        if rng.random() < 0.5:
            args += [option, ",".join(rng.choice(COUNTS[:10]) for _ in range(rng.randint(1, 3)))]
    args += _enums(rng, ["--format", "--profile"], rng.randint(0, 1))
    if rng.random() < 0.1:
        args += ["--max-points", rng.choice(["1", "2", "0", "-1", "1e17", "2m", "x"])]
    target = _output_target(rng, files)
    return args + (target or ["-o", "{dir}/grid.csv"])


def oom(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    """`oom` over what a failed job wrote: texts made odd, captured or malicious snapshots, through --from or stdin,
    alone or with a workload."""
    args = ["oom"]
    for index in range(rng.choice((0, 1, 1, 2, 3))):
        if rng.random() < 0.35:
            name, content = rng.choice(hostile_pickles())
            if rng.random() < 0.2:  # a captured snapshot cut short or with a byte changed
                content = _damaged(rng, content)
        else:
            name, content = f"err-{index}.txt", oom_text(rng)
        files.append((name, content))
        args += ["--from", "{dir}/" + name]
    if len(args) == 1 or rng.random() < 0.1:  # nothing named, or '-': stdin
        files.append(("stdin", oom_text(rng)))
        args += rng.choice(([], ["--from", "-"]))
    if rng.random() < 0.1:
        args += ["--from", rng.choice(("{dir}/missing.txt", "{dir}", "/dev/zero", "/proc/self/mem"))]
    if rng.random() < 0.4:
        args += ["--model", _model_arg(rng, files), "--gpu", _pick(rng, GPUS, HOSTILE_GPUS)]
        args += _options(rng, ["--batch", "--prompt-tokens"], COUNTS, rng.randint(0, 2))
        if rng.random() < 0.3:
            args += ["--mode", rng.choice(("train", "infer", "eval"))]
    return args + _enums(rng, ["--format", "--units"], rng.randint(0, 2))


def _damaged(rng: random.Random, content: bytes) -> bytes:
    if rng.random() < 0.5:
        return content[:rng.randrange(len(content))]
    at = rng.randrange(len(content))
    return content[:at] + bytes([rng.randrange(256)]) + content[at + 1:]


def catalog(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    del files
    return rng.choice([["gpus"], ["models"], ["systems"], ["gpus", "show", _pick(rng, GPUS, HOSTILE_GPUS, 0.4)],
                       ["models", "show", _pick(rng, MODELS, HOSTILE_MODELS, 0.4)],
                       ["systems", "show", _pick(rng, SYSTEMS, HOSTILE_GPUS, 0.4)],
                       [rng.choice(["gpus", "models", "systems"]), "--format", rng.choice(["json", "csv", "x"])],
                       ["schema", rng.choice(["estimate", "train", "plan", "sweep", "validate", "gpu", "oom", "x"])],
                       ["schema"], ["--help"], [rng.choice(COMMANDS), "--help"], ["no-such-command"], []])


def needs_a_gpu(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    """The commands that read or run a GPU; with none here, each is one line and exit 3 (a GPU machine would run
    them for real, which the campaign does not: it runs where the tests run)."""
    return rng.choice([["gpu"], ["gpu", "--format", "json"], ["monitor"], ["calibrate"],
                       ["calibrate", "--out", "{dir}/cal.yaml"], ["validate", "--model", _model_arg(rng, files)],
                       ["validate", "--model", "llama-3.2-1b", "--mode", "train", "--batch",
                        rng.choice(COUNTS)]])


def serve_refused(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    """`serve` options it must refuse before listening (a valid one would serve until stopped, so the campaign
    sends requests to the app in-process instead: tests/fuzz/server.py)."""
    choice = rng.randrange(4)
    if choice == 0:
        return ["serve", "--port", rng.choice(["-1", "65536", "x", "1e3", "", "99999999999999999999"])]
    if choice == 1:
        return ["serve", "--host", rng.choice(["256.1.1.1", "[/bold]", " ", "x" * 300]), "--port", "0"]
    if choice == 2:
        return ["serve", "--port", "0", "--specs-dir", rng.choice(["{dir}/missing", "/dev/null", "/etc/passwd"])]
    # a file `serve` reads at start (families and costs are read per request), of a kind no reader accepts: one it
    # accepted would start serving
    sub, original = rng.choice([(n, t) for n, t in _shipped_specs() if not n.startswith(("families/", "costs"))])
    files.append((f"specs/{sub}", spec_file(rng, original, REFUSED_SPECS)))
    return ["serve", "--port", "0", "--specs-dir", "{dir}/specs"]


@cache
def _shipped_specs() -> tuple[tuple[str, str], ...]:
    """A few spec files of every kind the catalog reads, as shipped: (path under specs/, text)."""
    from estimator.catalog.files import default_specs_dir

    root = default_specs_dir()
    names = ("gpus/nvidia-h100-sxm5.yaml", "gpus/amd-mi300x.yaml", "models/llama-3.1-8b.yaml",
             "models/mixtral-8x7b.yaml", "systems/hgx-h100.yaml", "families/llama.yaml", "profiles/optimized.yaml",
             "quant/int8.yaml", "costs.yaml")
    return tuple((name, (root / name).read_text(encoding="utf-8")) for name in names if (root / name).is_file())


def with_specs(rng: random.Random, files: list[tuple[str, bytes]]) -> list[str]:
    """Any command over a copy of the shipped specs with one spec file made hostile."""
    sub, original = rng.choice(_shipped_specs())
    files.append((f"specs/{sub}", spec_file(rng, original)))
    command = rng.choice([["estimate", "--model", "llama-3.1-8b", "--gpu", "h100"], ["gpus"], ["models"],
                          ["systems"], ["plan", "--model", "llama-3.1-8b", "--concurrency", "8", "--gpu", "h100"],
                          ["sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "1,2"],
                          ["estimate", "--mode", "train", "--model", "llama-3.1-8b", "--gpu", "h100"],
                          ["gpus", "show", "h100"], ["models", "show", "llama-3.1-8b"],
                          ["systems", "show", "hgx-h100"]])
    return [*command, "--specs-dir", "{dir}/specs"]


COMMANDS = ("estimate", "plan", "sweep", "oom", "gpus", "models", "systems", "schema", "serve", "gpu", "monitor",
            "calibrate", "validate")
