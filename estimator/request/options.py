"""Every option of `estimate`, `plan` and `sweep`, defined once, as data.

An `Option` says its request field (the parameter name), its flags, what it takes, its default, its help, its
topic and whether the output check runs on it; `COMMANDS` says which commands take which options, in the order
their help lists them, and `VARIANTS` what one command words or defaults differently. The CLI builds its typer
commands from these (`estimator.cli.command`), the `estimate` script parses them without typer (`words.parse`),
and the HTTP API reads its fields by them (`words.parse_fields`): none of the three keeps a table of its own.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any

from estimator.report import MAX_BATCH, MAX_TOKENS
from estimator.request import choices as ch

# What an option takes: a word ("text", converted at the door), a whole number ("int"), a file ("path"), nothing
# ("flag": set or not; "switch": --name/--no-name), a repeatable word ("texts"), or one of an Enum's values.
Takes = str | type[Enum]
TOPICS = ("workload", "hardware", "parallelism", "engine", "training", "planning", "output", "catalog")


@dataclass(frozen=True)
class Option:
    """One option: ``name`` is the request field and the parameter name; ``checked`` options are output paths,
    checked when parsed (refused when they exist, unless ``--force``, which is ``eager``: read first)."""

    name: str
    flags: tuple[str, ...]
    takes: Takes
    default: Any = None
    help: str = ""
    topic: str = "workload"
    required: bool = False
    checked: bool = False
    eager: bool = False

    @property
    def flag(self) -> str:
        """The long flag, as messages name the option: ``--prompt-tokens``."""
        return next(f for f in self.flags if f.startswith("--")).split("/")[0]


def _opt(name: str, takes: Takes = "text", default: Any = None, help: str = "", topic: str = "workload",
         flags: tuple[str, ...] = (), **more: Any) -> Option:
    return Option(name, flags or ("--" + name.replace("_", "-"),), takes, default, help, topic, **more)


_TRAIN = "training"
# One default for generated tokens in estimate, plan and sweep: 256, a typical reply. With none, an estimate is the
# prompt alone: no reply's KV cache, no decode step in the time of a request; plan and sweep rank and grid replies.
OUTPUT_HELP = ("Generated tokens per {what}, their KV cached too (256, a typical reply, in estimate, plan and sweep; "
               "0: the prompt alone).")

# The ceilings of `plan`'s search settings, beyond the limit every count has (`units.MAX_COUNT`, 10^18), so that a
# typo such as `--max-nodes 1e17` is refused at its field instead of being searched.
# - step_tokens: one engine step holds the decoding sequences plus prefill chunks; a budget past the longest prompt
#   (`report.MAX_TOKENS`, 100,000,000 tokens) plus the largest batch (`report.MAX_BATCH`, 1,000,000) is never used.
# - max_nodes: a replica spans at most 4,096 GPUs (the ceiling of a layout's tensor-parallel degree, as `--gpus`),
#   and every server holds at least one GPU, so no replica spans more than 4,096 servers.
CEILINGS: dict[str, int] = {"step_tokens": MAX_TOKENS + MAX_BATCH, "max_nodes": 4096}
OPTIONS: dict[str, Option] = {o.name: o for o in (
    _opt("model", flags=("--model", "-m"), required=True, help="Catalog name (llama-3.1-8b), Hugging Face Hub "
         "id (org/name[@revision]), config.json path or folder, or a size such as 70b."),
    _opt("gpu", flags=("--gpu", "-g"), topic="hardware", help="Catalog name or alias (h100, a100, rtx-4090); or "
         "give --system."),
    _opt("dtype", help="Weight format: fp32 fp16 bf16 fp8 int8 int4, or a quantization format (gptq-int4, awq-int4, "
         "nf4, q4_k_m...). Default: the checkpoint's quantization_config, else bf16."),
    _opt("kv_dtype", help="KV-cache format: fp32 fp16 bf16 fp8 int8. Default: the activation precision (bf16, or "
         "fp32 for fp32 models)."),
    _opt("batch", default="1", help="Concurrent sequences."),
    _opt("prompt_tokens", default="2048", help="Prompt length per sequence (2048; 8k = 8,000; 8K or 8Ki = 8,192, "
         "as vLLM reads them)."),
    _opt("output_tokens", default="256", help=OUTPUT_HELP.format(what="sequence")),
    _opt("gpus", default="1", topic="parallelism", help="Tensor-parallel degree: GPUs that split the model."),
    _opt("ep", topic="parallelism", help="MoE models: expert-parallel GPUs, each holding whole experts; a multiple "
         "of --gpus, whose groups each serve a share of the batch (data-parallel attention) and exchange tokens by "
         "all-to-all."),
    _opt("gpu_memory", topic="hardware", help="Usable memory per GPU with its unit (96GiB, 100GB), instead of the "
         "catalog's: a Mac whose wired limit was raised, a card shared with other work."),
    _opt("system", topic="hardware", help="Server the GPUs sit in (hgx-h100, gb200-nvl72, pcie-l40s; `estimator "
         "systems`). Default: the GPU's common server."),
    _opt("nodes", topic="hardware", help="Servers of --system (1)."),
    _opt("gpus_per_node", topic="hardware", help="GPUs per server, overriding the system's."),
    _opt("network", topic="hardware", help="Scale-out network per server, overriding the system's: NICS x "
         "Gbit/s[-ib|roce|eth], e.g. 8x400g-ib."),
    _opt("logits", ch.Logits, ch.Logits.last, "Compute logits for the last position only, or all positions."),
    _opt("profile", default="optimized", help="Efficiency profile: optimized (serving engine, CUDA graphs), hf "
         "(Hugging Face transformers eager), hf-graph (transformers, decode step in a CUDA graph) or megatron "
         "(training, kernel by kernel)."),
    _opt("mla_cache", ch.MlaCache, help="MLA models: cache the compressed latent (serving engines; the optimized "
         "profile's default) or decompressed K/V (transformers; the hf profile's)."),
    _opt("group_size", "int", help="Quantization group size for grouped formats (gptq-int4, awq-int4, nf4, mxfp4, "
         "nvfp4)."),
    _opt("output_format", ch.OutputFormat, None, "table, json or csv (default: what the -o file's extension says, "
         ".json .csv .txt; else table).", "output", ("--format", "-f")),
    _opt("units", ch.Units, ch.Units.gb, "Table units: gb (10⁹ B) or gib (2³⁰ B).", "output"),
    _opt("explain", "flag", False, "Print the arithmetic and assumptions.", "output"),
    _opt("specs_dir", "path", help="Add specs from this folder to the packaged catalog (same layout as specs/): a "
         "file there adds a card, model or system, or replaces the packaged file of the same name.", topic="catalog"),
    _opt("engine", ch.Engine, None, "Predict this serving engine's start-up (vllm): its KV cache, maximum "
         "concurrency, whether it starts, and its command line (docs/engines.md).", "engine"),
    _opt("gpu_memory_utilization", help="vLLM: share of each GPU's memory it may use (0.9).", topic="engine"),
    _opt("max_model_len", help="vLLM: longest request, prompt + output (32k, 131072; default the model's "
         "max_position_embeddings).", topic="engine"),
    _opt("max_num_seqs", help="vLLM: most requests batched at once (256; 1024 on cards of 70 GiB or more).",
         topic="engine"),
    _opt("max_num_batched_tokens", help="vLLM: tokens per engine step, the size of its profile run (2048; 8192 "
         "on cards of 70 GiB or more).", topic="engine"),
    _opt("block_size", help="vLLM: tokens per KV-cache block (16).", topic="engine"),
    _opt("kv_cache_dtype", help="vLLM: KV-cache format, auto (the model's dtype), fp8, fp8_e4m3 or fp8_e5m2.",
         topic="engine"),
    _opt("enforce_eager", "flag", False, "vLLM: no CUDA graphs.", "engine"),
    _opt("mode", ch.Mode, ch.Mode.infer, "infer, or train (one optimizer step; --batch is the micro-batch).", _TRAIN),
    _opt("seq_len", help="Train: tokens per sequence (default 2048).", topic=_TRAIN),
    _opt("grad_accum", help="Train: micro-batches per optimizer step (1).", topic=_TRAIN),
    _opt("precision", ch.Precision, None, "Train: amp = fp32 weights + 16-bit autocast, fp8 = Transformer Engine FP8 "
         "GEMMs (default amp-bf16).", _TRAIN),
    _opt("optimizer", ch.Optimizer, None, "Train: optimizer (adamw = PyTorch foreach).", _TRAIN),
    _opt("recompute", ch.Recompute, None, "Train: activation recomputation (none).", _TRAIN),
    _opt("attention", ch.Attention, None, "Train: attention kernel (sdpa).", _TRAIN),
    _opt("zero", help="Train: DeepSpeed ZeRO stage 0-3 over --dp ranks (0).", topic=_TRAIN),
    _opt("fsdp", ch.Fsdp, None, "Train: PyTorch FSDP sharding over --dp ranks.", _TRAIN),
    _opt("dp", help="Train: data-parallel ranks (1).", topic="parallelism"),
    _opt("tp", help="Train: tensor-parallel ranks (1).", topic="parallelism"),
    _opt("pp", help="Train: pipeline stages, 1F1B (1).", topic="parallelism"),
    _opt("cp", help="Train: context-parallel ranks, the sequence split over them, ring attention (1).",
         topic="parallelism"),
    _opt("virtual_stages", help="Train: model chunks per pipeline GPU, the interleaved 1F1B schedule (1).",
         topic="parallelism"),
    _opt("sequence_parallel", "flag", False, "Train: split norms and dropout along the sequence over --tp.",
         "parallelism"),
    _opt("lora_rank", help="Train: LoRA rank (frozen base, adapters trained).", topic=_TRAIN),
    _opt("lora_targets", help="Train: 'all' or e.g. q,k,v,o,gate,up,down (all).", topic=_TRAIN),
    _opt("qlora", "flag", False, "Train: 4-bit NF4 base (needs --lora-rank).", _TRAIN),
    _opt("output", "path", None, "Write to this file instead of stdout (required for xlsx); its extension sets the "
         "format.", "output",
         ("--output", "-o"), checked=True),
    _opt("plot", "path", None, "Also draw charts to FILE.png or FILE.svg (needs matplotlib: pip install "
         "'llm-estimator[plot]').", "output", checked=True),
    _opt("force", "flag", False, "Replace what exists: an -o or --plot file, calibrate's entry for this card, a "
         "--save file of validate.", "output", eager=True),
    _opt("calibration", "path", None, "Calibration file from `estimator calibrate` (default: the user config dir's, "
         "when it has this card).", "catalog"),
    # plan
    _opt("concurrency", help="Requests served at once.", topic="planning"),
    _opt("target_tokens_per_s", help="Aggregate generated tokens/s to reach.", topic="planning"),
    _opt("max_ttft_s", help="Limit on time to first token, seconds.", topic="planning"),
    _opt("max_tpot_s", help="Limit on time per output token, seconds.", topic="planning"),
    _opt("systems", help="Servers to compare, e.g. hgx-h100,gb200-nvl72,pcie-l40s (`estimator systems`).",
         topic="hardware"),
    _opt("headroom", default="0.10", help="Fraction of GPU memory kept free, as engines keep it (0.10).",
         topic="planning"),
    _opt("step_tokens", default="8192", help="Token budget per engine step: decodes + prefill chunks (8192, vLLM's "
         "max_num_batched_tokens).", topic="planning"),
    _opt("max_nodes", default="8", help="Most servers one replica may span (8).", topic="planning"),
    _opt("allow_tp_across_domains", "flag", False, "Let tensor parallel cross NVLink domains (PCIe, network).",
         "planning"),
    _opt("prices", "path", None, "YAML file of card prices (docs/planning.md).", "planning"),
    _opt("sort", ch.SortBy, ch.SortBy.cost, "Rank by cost ($/h for the goal: rented where priced, else owned), owned, "
         "rented, cards, or throughput.", "planning"),
    # sweep
    _opt("max_points", help="Largest grid evaluated (default 2,000,000 points, about 0.7 KB of memory each; 10m, "
         "2.5e7 accepted).", topic="output"),
    _opt("progress", "switch", True, "Progress bar (shown only in a terminal).", "output",
         ("--progress/--no-progress",)),
)}

_ESTIMATE = ("model", "gpu", "dtype", "kv_dtype", "batch", "prompt_tokens", "output_tokens", "gpus", "ep",
             "gpu_memory", "system", "nodes", "gpus_per_node", "network", "logits", "profile", "mla_cache",
             "group_size", "output_format", "units", "explain", "specs_dir", "engine", "gpu_memory_utilization",
             "max_model_len", "max_num_seqs", "max_num_batched_tokens", "block_size", "kv_cache_dtype",
             "enforce_eager", "mode", "seq_len", "grad_accum",
             "precision", "optimizer", "recompute", "attention", "zero", "fsdp", "dp", "tp", "pp", "cp",
             "virtual_stages", "sequence_parallel", "lora_rank", "lora_targets", "qlora", "output", "plot", "force",
             "calibration")
_PLAN = ("model", "prompt_tokens", "output_tokens", "concurrency", "target_tokens_per_s", "max_ttft_s", "max_tpot_s",
         "gpu", "gpus", "systems", "headroom", "step_tokens", "max_nodes", "allow_tp_across_domains", "dtype",
         "kv_dtype", "profile", "prices", "sort", "output_format", "output", "logits", "group_size", "explain",
         "units", "plot", "force", "specs_dir")
_SWEEP = ("model", "gpu", "dtype", "kv_dtype", "batch", "prompt_tokens", "output_tokens", "gpus", "profile",
          "output_format", "output", "logits", "group_size", "explain", "units", "plot", "force", "max_points",
          "progress", "specs_dir")
COMMANDS: dict[str, tuple[str, ...]] = {"estimate": _ESTIMATE, "plan": _PLAN, "sweep": _SWEEP}

_NOT_HERE = "Not taken here: see estimate --explain."
_PROFILES = "Efficiency profile: optimized or hf."
# What plan or sweep says or defaults differently from estimate (field → the Option's fields it replaces).
VARIANTS: dict[tuple[str, str], dict[str, Any]] = {
    ("plan", "model"): {"help": "Catalog name, config.json, or a size such as 70b."},
    ("plan", "prompt_tokens"): {"help": "Prompt length per request."},
    ("plan", "output_tokens"): {"help": OUTPUT_HELP.format(what="request")},
    ("plan", "gpu"): {"takes": "texts", "help": "Cards to compare, repeatable or comma-separated (--gpu a100 --gpu "
                      "h100, --gpu a100,h100,l40s), each in every server of specs/systems that holds it (default: "
                      "every system)."},
    ("plan", "gpus"): {"default": None, "topic": "hardware", "help": "Deprecated here: the old spelling of --gpu "
                       "(cards). In estimate and sweep --gpus is the tensor-parallel degree; plan searches that "
                       "itself. Still read, with a warning."},
    ("plan", "dtype"): {"help": "Weight format (bf16, fp8, awq-int4...). Default: the checkpoint's own format, "
                        "as estimate's."},
    ("plan", "kv_dtype"): {"help": "KV-cache format (default as estimate)."},
    ("plan", "profile"): {"help": _PROFILES},
    ("plan", "output_format"): {"help": "table, json, csv or xlsx (default: the -o file's extension, else table)."},
    ("plan", "explain"): {"help": _NOT_HERE},
    ("plan", "units"): {"default": None, "help": "Not taken here: plan's table is in GB; --format json gives bytes."},
    ("sweep", "model"): {"help": "Models, comma-separated."},
    ("sweep", "gpu"): {"required": True, "help": "Cards, comma-separated."},
    ("sweep", "dtype"): {"help": "Weight formats, comma-separated. Default: each model's checkpoint format, as "
                         "estimate's."},
    ("sweep", "kv_dtype"): {"help": "KV-cache format (default as estimate)."},
    ("sweep", "batch"): {"help": "Batches, comma-separated (1,8,64)."},
    ("sweep", "prompt_tokens"): {"help": "Prompt lengths (1k,8k,32k)."},
    ("sweep", "output_tokens"): {"help": "Generated tokens per sequence, comma-separated (default 256, as estimate "
                                 "and plan)."},
    ("sweep", "gpus"): {"help": "Tensor-parallel degrees, comma-separated."},
    ("sweep", "profile"): {"help": _PROFILES},
    ("sweep", "output_format"): {"help": "csv, json or xlsx (table: csv; default: the -o file's extension, else "
                                 "csv)."},
    ("sweep", "explain"): {"help": _NOT_HERE},
    ("sweep", "units"): {"default": None, "help": "Not taken here: sweep writes bytes."},
}


@cache
def options_of(command: str) -> tuple[Option, ...]:
    """The options ``command`` takes, in the order its help lists them, as that command words them."""
    return tuple(dataclasses.replace(OPTIONS[name], **VARIANTS.get((command, name), {}))
                 for name in COMMANDS[command])


def commands_taking(name: str) -> tuple[str, ...]:
    """The commands that take the option ``name``."""
    return tuple(command for command, names in COMMANDS.items() if name in names)


def flag_of(field: str) -> str:
    """The flag the CLI spells a request field with (``output_format`` → ``--format``)."""
    option = OPTIONS.get(field)
    return option.flag if option is not None else "--" + field.replace("_", "-")
