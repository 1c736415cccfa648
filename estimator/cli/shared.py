"""What every command shares, without typer: choices, the catalog to read, parsing of counts and number formats.

The `estimate` console script's fast path (`estimate_fast.py`) parses its options without typer and runs the
command through these, so importing this module must not import typer (nor the catalog: the script reads its
options before the heavy imports); `options.py` adds the typer option types and re-exports all of this, and
commands import from there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from estimator.errors import WorkloadInvalid
from estimator.units import parse_count

if TYPE_CHECKING:
    from rich.console import Console

    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.registry import Catalog
    from estimator.catalog.specs import GpuSpec, NumberFormat
    from estimator.catalog.systems import SystemSpec
    from estimator.inference.workload import InferenceWorkload

KV_FORMATS_HINT = "use fp32, fp16, bf16, fp8 or int8"


class OutputFormat(str, Enum):
    """The one --format choice; each command takes the subset it can write (`check_format`)."""

    table = "table"
    json = "json"
    csv = "csv"
    xlsx = "xlsx"


def check_format(chosen: OutputFormat, allowed: Sequence[OutputFormat], output: Path | None = None) -> None:
    """Refuse, in one line and before any work, a format this command does not write (or xlsx without a file)."""
    if chosen not in allowed:
        names = ", ".join(f.value for f in allowed)
        raise WorkloadInvalid(f"--format {chosen.value} is not available for this command; use {names}")
    if chosen is OutputFormat.xlsx and output is None:
        raise WorkloadInvalid("--format xlsx needs --output FILE.xlsx")


class Units(str, Enum):
    gb = "gb"
    gib = "gib"


class Logits(str, Enum):
    last = "last"
    all = "all"


class MlaCache(str, Enum):
    """estimate --mla-cache."""

    latent = "latent"
    decompressed = "decompressed"


def refuse(command: str, given: dict[str, bool]) -> None:
    """One line for the options of another command that ``command`` takes only to say where they apply:
    ``given`` maps each such flag to whether it was set."""
    where = {
        "--explain": "prints one estimate's arithmetic: run `estimator estimate --explain` with one point's --gpu "
                     "and --gpus",
        "--units": ("chooses a table's units in estimate; plan's table is in GB, and --format json or csv gives "
                    "bytes" if command == "plan" else "chooses a table's units; sweep writes bytes in every column"),
    }
    flags = [flag for flag, set_ in given.items() if set_]
    if flags:
        raise WorkloadInvalid(f"{command} does not take " + " or ".join(flags) + ": "
                              + "; ".join(f"{flag} {where[flag]}" for flag in flags))


def writable(path: Path | None, *, force: bool = False) -> Path | None:
    """What the output options' callback does: an output path is checked before the command does any work (and
    refused when it exists, unless ``force``)."""
    if path is not None:
        from estimator.render.output import check_target

        check_target(path, force=force)
    return path


def catalog_for(specs_dir: Path | None) -> Catalog:
    """The packaged catalog, or the one in ``specs_dir``."""
    from estimator.catalog.registry import Catalog, default_catalog

    return default_catalog() if specs_dir is None else Catalog.load(specs_dir)


def positive(name: str, text: str, *, allow_zero: bool = False) -> int:
    """A count option (``2048``, ``8k``, ``32Ki``) that must be positive (or non-negative)."""
    try:
        value = parse_count(text)
    except WorkloadInvalid as error:  # the option it came with, as every other refusal of a value names it
        raise WorkloadInvalid(f"{name}: {error}") from None
    if value < 0 or (value == 0 and not allow_zero):
        raise WorkloadInvalid(f"{name} must be {'non-negative' if allow_zero else 'positive'}, got {text!r}")
    return value


def number_format(catalog: Catalog, name: str, group_size: int | None) -> NumberFormat:
    """A weight format by name, with ``--group-size`` applied where the format is grouped."""
    fmt = catalog.formats.get(name)
    if group_size is not None:
        _check_group_size(group_size)
        if fmt.group_size is None:
            raise WorkloadInvalid(f"--group-size applies to grouped formats (gptq-int4, awq-int4, nf4, mxfp4, "
                                  f"nvfp4), not {fmt.name}")
        fmt = fmt.with_group_size(group_size)
    return fmt


def weights_format(catalog: Catalog, model: ModelSpec, dtype: str | None, group_size: int | None) -> NumberFormat:
    """``--dtype`` when given; else the checkpoint's own format: its file headers' bytes (a folder of safetensors,
    a .gguf file), else its quantization_config, else bf16."""
    if dtype is not None:
        return number_format(catalog, dtype, group_size)
    if model.stored is not None and model.arch is not None:
        from estimator.model.memory import stored_format

        compute = (catalog.formats.get(model.checkpoint.base).compute_dtype if model.checkpoint is not None
                   else model.stored.compute_dtype)
        return stored_format(model.arch, model.stored, catalog.formats.get(compute))
    if model.checkpoint_error is not None:
        raise WorkloadInvalid(model.checkpoint_error)
    if model.checkpoint is None:
        return number_format(catalog, "bf16", group_size)
    from estimator.catalog.checkpoint_quant import checkpoint_format

    fmt = checkpoint_format(model.checkpoint, catalog.formats.get(model.checkpoint.base))
    if group_size is not None:
        _check_group_size(group_size)
    return fmt.with_group_size(group_size) if group_size is not None and fmt.group_size is not None else fmt


def _check_group_size(group_size: int) -> None:
    """A group holds at least one weight: a zero or negative size would divide the scale bits by nothing or make
    them negative (the fuzz campaign's `--group-size -1` gave negative weights that "fit")."""
    if group_size < 1:
        raise WorkloadInvalid(f"--group-size must be a positive number of weights per group, got {group_size}")


def kv_format(catalog: Catalog, weights: NumberFormat, kv_dtype: str | None) -> NumberFormat:
    """The KV-cache format: as asked, else the compute precision (fp16 models cache fp16, quantized ones bf16)."""
    if kv_dtype is None:
        return catalog.formats.get(weights.compute_dtype if weights.compute_dtype in ("fp32", "fp16") else "bf16")
    fmt = catalog.formats.get(kv_dtype)
    if not fmt.kv_cache:
        raise WorkloadInvalid(f"--kv-dtype {kv_dtype} is not a KV-cache format; {KV_FORMATS_HINT}")
    return fmt


def console(**options: Any) -> Console:
    """A rich console for tables (rich loads only here, so JSON and CSV start faster). Every command's tables are
    drawn on one of these: emoji codes are off, as markup is escaped, so a name such as ``my:fire:model`` (from a
    config.json, a spec, NVML) prints as written, not as an emoji."""
    from rich.console import Console

    return Console(emoji=False, **options)


FILE_TABLE_COLUMNS = 200  # a table written to a file (-o) has no terminal: laid out as plan lays out its file


def print_table(output: Path | None, draw: Callable[[Console], None]) -> None:
    """A table to the terminal, or (``-o FILE``) to ``output``, written atomically, without terminal colours."""
    if output is None:
        draw(console())
        return
    from estimator.render.output import write_text_atomically

    write_text_atomically(output, lambda handle: draw(console(file=handle, width=FILE_TABLE_COLUMNS,
                                                              color_system=None)))


def hardware(catalog: Catalog, gpu: str | None, system: str | None, nodes: str | None, gpus_per_node: str | None,
             tp: int, network: str | None = None) -> tuple[GpuSpec, SystemSpec | None, int, bool]:
    """(GPU, system or None, nodes, whether the system was assumed) for `--gpu`, `--system`, `--nodes` and
    `--gpus-per-node`: a system names its GPU; a GPU alone on more than one GPU sits in its common server."""
    from pydantic import ValidationError

    from estimator.catalog.registry import validation_message
    from estimator.catalog.systems import SystemSpec

    count = 1 if nodes is None else positive("--nodes", nodes)
    if system is not None:
        chosen: SystemSpec | None = catalog.systems.get(system)
        assert chosen is not None
        card = catalog.system_gpu(chosen)
        if gpu is not None and catalog.gpus.get(gpu).name != card.name:
            raise WorkloadInvalid(f"--gpu {gpu} is not the GPU of --system {chosen.name} ({card.name}); give one")
        assumed = False
    elif gpu is not None:
        card = catalog.gpus.get(gpu)
        wanted = tp > 1 or nodes is not None or gpus_per_node is not None
        found = catalog.systems_for(card) if wanted else []
        chosen, assumed = (found[0], True) if found else (None, False)
        if chosen is None and (nodes is not None or gpus_per_node is not None):
            raise WorkloadInvalid(f"no system in specs/systems holds {card.name}: --nodes and --gpus-per-node need "
                                  "--system")
    else:
        raise WorkloadInvalid("give --gpu (a card) or --system (a server, e.g. hgx-h100)")
    if chosen is not None and gpus_per_node is not None:
        per_node = positive("--gpus-per-node", gpus_per_node)
        data = {**chosen.model_dump(), "gpus_per_node": per_node, "domain_gpus": min(chosen.domain_gpus, per_node)}
        try:
            chosen = SystemSpec.model_validate(data)
        except ValidationError as error:
            raise WorkloadInvalid(f"--gpus-per-node {per_node}: {validation_message(error)}") from None
    if network is not None:
        from estimator.catalog.systems import with_network

        if chosen is None:
            raise WorkloadInvalid("--network replaces a system's scale-out network; give --system")
        try:
            chosen = with_network(chosen, network)
        except ValidationError as error:
            raise WorkloadInvalid(f"--network {network}: {validation_message(error)}") from None
        except ValueError as error:
            raise WorkloadInvalid(str(error)) from None
    return card, chosen, count, assumed


def split_list(text: str) -> list[str]:
    """A comma-separated option's items (plan's --systems, sweep's axes), refused when it names none."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise WorkloadInvalid(f"expected a comma-separated list, got {text!r}")
    return items


def count_list(option: str, text: str, *, allow_zero: bool = False) -> list[int]:
    """A comma-separated list of counts (``1,8,64``, ``1k,8k``), each checked as `positive` checks one."""
    return [positive(option, t, allow_zero=allow_zero) for t in split_list(text)]


def _formats(catalog: Catalog, dtype: str, kv_dtype: str | None,
             group_size: int | None = None) -> tuple[NumberFormat, NumberFormat]:
    """The weight format (with --group-size) and the KV format, defaulting as `estimate` does."""
    weights = number_format(catalog, dtype, group_size)
    return weights, kv_format(catalog, weights, kv_dtype)


def inference_workload(catalog: Catalog, dtype: str, kv_dtype: str | None, profile: str, p: dict[str, Any],
                       **fields: int) -> InferenceWorkload:
    """The validated workload of plan's and sweep's options (``p``: --group-size, --logits), ``fields`` the rest."""
    from pydantic import ValidationError

    from estimator.catalog.registry import validation_message
    from estimator.inference.workload import InferenceWorkload

    weights, kv = _formats(catalog, dtype, kv_dtype, p.get("group_size"))
    try:
        return InferenceWorkload(weight_format=weights, kv_format=kv, profile=catalog.profiles.get(profile),
                                 logits=str(getattr(p.get("logits"), "value", p.get("logits") or "last")), **fields)
    except ValidationError as error:
        raise WorkloadInvalid(validation_message(error)) from None
