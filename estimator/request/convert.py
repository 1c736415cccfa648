"""The door: an option's text converted once into the typed value a request holds, and refused there, located at
its field, when it cannot be (`count`, `size`, `choice`...); `estimate_request_of` builds a whole request from the
values of the estimate command's options (or the HTTP API's fields, or keyword arguments of the Python API)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar, overload

from estimator.request.choices import Engine, Logits, MlaCache, Mode, OutputFormat, Units
from estimator.request.engine import KNOBS, KV_CACHE_DTYPES, fraction
from estimator.request.errors import FieldInvalid, invalid
from estimator.request.models import EngineKnobs, EstimateRequest, Hardware, Job, Output, Training
from estimator.request.options import options_of
from estimator.units import checked_count, parse_bytes, parse_count, parse_tokens, shown

E = TypeVar("E", bound=Enum)
ESTIMATE_FORMATS = (OutputFormat.table, OutputFormat.json, OutputFormat.csv)  # inference and training alike


# The options that count tokens: their text follows vLLM's convention (`units.parse_tokens`: 2k = 2,000, 2K = 2,048).
TOKEN_FIELDS = frozenset({"prompt_tokens", "output_tokens", "seq_len", "step_tokens"})


def count(field: str, text: str | int, *, allow_zero: bool = False, at_most: int | None = None) -> int:
    """A count (``2048``, ``8k``, ``32Ki``) that must be positive (or, ``allow_zero``, non-negative): every count
    option of every command and endpoint comes through here, so one limit (`units.MAX_COUNT`) and one message
    hold for all, whether the count came as text or as a number. Token counts (`TOKEN_FIELDS`) read an uppercase
    K, M or G as binary, as vLLM does; ``at_most`` is the option's own ceiling (`options.CEILINGS`), refused in the
    words a workload's bound is (``--max-nodes must be at most …``)."""
    from estimator.errors import WorkloadInvalid

    parse = parse_tokens if field in TOKEN_FIELDS else parse_count
    try:
        value = checked_count(text, text) if isinstance(text, int) else parse(text)
    except WorkloadInvalid as error:  # the field it came with, as every other refusal of a value names it
        raise invalid(field, str(error)) from None
    if value < 0 or (value == 0 and not allow_zero):
        raise FieldInvalid(field, "{" + field + "} must be {sign}, got {text}", text=shown(str(text)),
                           sign="non-negative" if allow_zero else "positive")
    if at_most is not None and value > at_most:
        raise FieldInvalid(field, "{" + field + "} must be at most {limit}, got {got}", limit=f"{at_most:,}",
                           got=f"{value:,}")
    return value


def maybe_count(field: str, text: str | int | None) -> int | None:
    """`count`, or None for an option not given."""
    return None if text is None else count(field, text)


def size(field: str, text: str | int | None) -> int | None:
    """A size with its unit (``96GiB``, ``100GB``) in bytes, or None for an option not given."""
    from estimator.errors import WorkloadInvalid

    if text is None or isinstance(text, int):
        return text
    try:
        return parse_bytes(text)
    except WorkloadInvalid as error:  # worded whole: "not a size: 'x' (expected ...)"
        raise FieldInvalid(field, "{message}", message=str(error)) from None


@overload
def choice(field: str, kind: type[E], value: str | E) -> E: ...


@overload
def choice(field: str, kind: type[E], value: None) -> None: ...


def choice(field: str, kind: type[E], value: str | E | None) -> E | None:
    """One of ``kind``'s values (the Enum member itself, or its text), or None."""
    if value is None or isinstance(value, kind):
        return value
    found = next((member for member in kind if member.value == value), None)
    if found is None:
        names = ", ".join(repr(member.value) for member in kind)
        raise FieldInvalid(field, "{" + field + "} {text} is not one of {names}", text=repr(value), names=names)
    return found


def split_list(field: str, text: str) -> list[str]:
    """A comma-separated field's items (plan's systems, sweep's axes), refused when it names none."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise FieldInvalid(field, "expected a comma-separated list, got {text}", text=repr(text))
    return items


def count_list(field: str, text: str, *, allow_zero: bool = False) -> list[int]:
    """A comma-separated list of counts (``1,8,64``, ``1k,8k``), each checked as `count` checks one."""
    return [count(field, t, allow_zero=allow_zero) for t in split_list(field, text)]


def check_format(chosen: OutputFormat, allowed: Sequence[OutputFormat], output: Path | None = None) -> None:
    """Refuse, before any work, a format the command does not write (or xlsx without a file)."""
    if chosen not in allowed:
        names = ", ".join(f.value for f in allowed)
        raise FieldInvalid("output_format", "{output_format} {name} is not available for this command; use {names}",
                           name=chosen.value, names=names)
    if chosen is OutputFormat.xlsx and output is None:
        raise FieldInvalid("output_format", "{output_format} xlsx needs {output} FILE.xlsx")


# What an output file's extension says its format is (the formats the commands write; .txt and .text: the table).
EXTENSION_FORMATS = {".json": OutputFormat.json, ".csv": OutputFormat.csv, ".xlsx": OutputFormat.xlsx,
                     ".txt": OutputFormat.table, ".text": OutputFormat.table}


def format_for(given: str | OutputFormat | None, output: str | Path | None, default: OutputFormat,
               allowed: Sequence[OutputFormat]) -> OutputFormat:
    """The format a command writes: ``--format`` when given, else what the ``-o`` file's extension says
    (`EXTENSION_FORMATS`: ``-o plan.csv`` writes CSV), else ``default``; a ``--format`` that contradicts the
    extension is refused in one line, as is a format the command does not write (`check_format`)."""
    chosen = choice("output_format", OutputFormat, given)
    said = None if output is None else EXTENSION_FORMATS.get(Path(output).suffix.lower())
    if chosen is not None and said is not None and chosen is not said:
        raise FieldInvalid("output_format", "{output_format} {name} contradicts {output} {path}, a {suffix} file: "
                           "drop {output_format} or name the file {wanted}", name=chosen.value,
                           path=shown(str(output)), suffix=Path(output or "").suffix,
                           wanted="." + ("txt" if chosen is OutputFormat.table else chosen.value))
    if chosen is None and said is not None and said not in allowed:
        suffixes = ", ".join(s for s, f in EXTENSION_FORMATS.items() if f in allowed)
        raise FieldInvalid("output", "{output} {path}: this command does not write {suffix} files; name it {suffixes}",
                           path=shown(str(output)), suffix=Path(output or "").suffix, suffixes=suffixes)
    resolved = chosen or said or default
    check_format(resolved, allowed, None if output is None else Path(output))
    return resolved


def refuse(command: str, given: dict[str, bool]) -> None:
    """One line for the options of another command that ``command`` takes only to say where they apply:
    ``given`` maps each such field (explain, units) to whether it was set."""
    where = {
        "explain": "prints one estimate's arithmetic: run `estimator estimate {explain}` with one point's {gpu} "
                   "and {gpus}",
        "units": ("chooses a table's units in estimate; plan's table is in GB, and {output_format} json or csv "
                  "gives bytes" if command == "plan" else "chooses a table's units; sweep writes bytes in every "
                  "column"),
    }
    fields = [field for field, set_ in given.items() if set_]
    if fields:
        template = (command + " does not take " + " or ".join("{" + f + "}" for f in fields) + ": "
                    + "; ".join("{" + f + "} " + where[f] for f in fields))
        raise FieldInvalid(fields[0], template)


def defaults(command: str) -> dict[str, Any]:
    """Every option of ``command`` at its default: the base a partial set of fields is laid over."""
    return {o.name: o.default for o in options_of(command)}


def estimate_request_of(values: Mapping[str, Any]) -> EstimateRequest:
    """The request for the estimate command's option values (field → text, choice, path or flag; a field left
    out takes its default), every text converted here, once. The options of the other mode are refused first,
    as given (`training.reject_other_mode`)."""
    from estimator.request.training import reject_other_mode

    p = {**defaults("estimate"), **values}
    unknown = sorted(set(p) - set(defaults("estimate")))
    if unknown:
        raise FieldInvalid(unknown[0], "{name} is not an option of estimate", name=repr(unknown[0]))
    mode = choice("mode", Mode, p["mode"])
    reject_other_mode(mode, p)
    hardware = Hardware(gpu=p["gpu"], system=p["system"], nodes=maybe_count("nodes", p["nodes"]),
                        gpus_per_node=maybe_count("gpus_per_node", p["gpus_per_node"]), network=p["network"],
                        gpu_memory=size("gpu_memory", p["gpu_memory"]), gpus=count("gpus", p["gpus"]),
                        ep=maybe_count("ep", p["ep"]))
    job = Job(model=p["model"], mode=mode, dtype=p["dtype"], kv_dtype=p["kv_dtype"],
              batch=count("batch", p["batch"]), prompt_tokens=count("prompt_tokens", p["prompt_tokens"]),
              output_tokens=count("output_tokens", p["output_tokens"], allow_zero=True),
              logits=choice("logits", Logits, p["logits"]), profile=p["profile"],
              mla_cache=choice("mla_cache", MlaCache, p["mla_cache"]), group_size=p["group_size"],
              training=training_of(p) if mode is Mode.train else Training())
    output = Output(format=format_for(p["output_format"], p["output"], OutputFormat.table, ESTIMATE_FORMATS),
                    units=choice("units", Units, p["units"]), explain=bool(p["explain"]),
                    output=_path(p["output"]), plot=_path(p["plot"]), force=bool(p["force"]))
    return EstimateRequest(job=job, hardware=hardware, output=output, specs_dir=_path(p["specs_dir"]),
                           calibration=_path(p["calibration"]), engine=engine_of(p, mode))


def _path(value: str | Path | None) -> Path | None:
    return None if value is None else Path(value)


def training_of(p: Mapping[str, Any]) -> Training:
    """The training options of the estimate command's values, converted (None: not given)."""
    from estimator.request.choices import Attention, Fsdp, Optimizer, Precision, Recompute
    from estimator.training.workload import parse_lora_targets

    zero = p["zero"]
    if zero is not None and not isinstance(zero, int):
        stage = {"0": 0, "1": 1, "2": 2, "3": 3}.get(str(zero).strip())
        if stage is None:
            raise FieldInvalid("zero", "{zero} must be 0, 1, 2 or 3, got {text}", text=repr(zero))
        zero = stage
    targets = p["lora_targets"]
    if isinstance(targets, str):
        try:
            targets = parse_lora_targets(targets)
        except ValueError as error:
            raise FieldInvalid("lora_targets", "{message}", message=str(error)) from None
    return Training(
        seq_len=maybe_count("seq_len", p["seq_len"]), grad_accum=maybe_count("grad_accum", p["grad_accum"]),
        precision=choice("precision", Precision, p["precision"]),
        optimizer=choice("optimizer", Optimizer, p["optimizer"]),
        recompute=choice("recompute", Recompute, p["recompute"]),
        attention=choice("attention", Attention, p["attention"]), zero=zero,
        fsdp=choice("fsdp", Fsdp, p["fsdp"]), dp=maybe_count("dp", p["dp"]), tp=maybe_count("tp", p["tp"]),
        pp=maybe_count("pp", p["pp"]), cp=maybe_count("cp", p["cp"]),
        virtual_stages=maybe_count("virtual_stages", p["virtual_stages"]),
        sequence_parallel=bool(p["sequence_parallel"]), lora_rank=maybe_count("lora_rank", p["lora_rank"]),
        lora_targets=None if targets is None else tuple(targets), qlora=bool(p["qlora"]))


def engine_of(p: Mapping[str, Any], mode: Mode) -> EngineKnobs | None:
    """The engine options of the estimate command's values, converted; None without ``--engine``."""
    given = [k for k in KNOBS if p.get(k) not in (None, False)]
    if p.get("engine") is None:
        if given:
            raise FieldInvalid(given[0], "{" + given[0] + "} is a vLLM knob: it needs {engine} vllm")
        return None
    if mode is Mode.train:
        raise FieldInvalid("engine", "{engine} predicts a serving engine's start-up: it applies to {mode} infer")
    if p.get("ep") is not None:
        raise FieldInvalid("ep", "{ep} with {engine}: the engine's expert-parallel layout is not modelled yet; "
                           "give {gpus} (its --tensor-parallel-size) alone")
    if p.get("profile") not in (None, "optimized"):
        raise FieldInvalid("profile", "{profile} is the runtime's own efficiency: with {engine} the engine is the "
                           "runtime (profile optimized)")
    dtype = str(p.get("kv_cache_dtype") or "auto")
    if dtype not in KV_CACHE_DTYPES:
        raise FieldInvalid("kv_cache_dtype", "{kv_cache_dtype} {text} is not one of {names}", text=repr(dtype),
                           names=", ".join(KV_CACHE_DTYPES))
    if dtype != "auto" and p.get("kv_dtype") is not None:
        raise FieldInvalid("kv_cache_dtype", "give {kv_cache_dtype} or {kv_dtype}, not both: they set the same "
                           "format")
    return EngineKnobs(engine=choice("engine", Engine, p["engine"]),
                       gpu_memory_utilization=fraction(p.get("gpu_memory_utilization")),
                       max_model_len=maybe_count("max_model_len", p.get("max_model_len")),
                       max_num_seqs=maybe_count("max_num_seqs", p.get("max_num_seqs")),
                       max_num_batched_tokens=maybe_count("max_num_batched_tokens", p.get("max_num_batched_tokens")),
                       block_size=maybe_count("block_size", p.get("block_size")), kv_cache_dtype=dtype,
                       enforce_eager=bool(p.get("enforce_eager")))
