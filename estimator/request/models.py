"""The typed requests: the job (model and workload), the hardware, the output. Every field holds a converted value
(a count is an int, a size is bytes, a choice its Enum); `estimator.request.convert` builds them from the strings
of a command line or a query, and the Python API builds them directly."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from estimator.request.choices import (
    Attention,
    Engine,
    Fsdp,
    Logits,
    MlaCache,
    Mode,
    Optimizer,
    OutputFormat,
    Precision,
    Recompute,
    Units,
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Hardware(_Frozen):
    """Where the job runs: a card (``gpu``) or a server (``system``) of it, how many servers and GPUs each, the
    scale-out network, the usable memory per GPU (bytes), and the inference parallel degrees: ``gpus`` tensor
    parallel, ``ep`` expert parallel."""

    gpu: str | None = None
    system: str | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None
    network: str | None = None
    gpu_memory: int | None = None
    gpus: int = 1
    ep: int | None = None


class Training(_Frozen):
    """The options of one optimizer step (``mode`` train); None: the option was not given (its default applies)."""

    seq_len: int | None = None
    grad_accum: int | None = None
    precision: Precision | None = None
    optimizer: Optimizer | None = None
    recompute: Recompute | None = None
    attention: Attention | None = None
    zero: int | None = None
    fsdp: Fsdp | None = None
    dp: int | None = None
    tp: int | None = None
    pp: int | None = None
    cp: int | None = None
    virtual_stages: int | None = None
    sequence_parallel: bool = False
    lora_rank: int | None = None
    lora_targets: tuple[str, ...] | None = None
    qlora: bool = False

    def given(self) -> list[str]:
        """The fields set away from "not given"."""
        return [name for name, value in self if value not in (None, False)]


class Job(_Frozen):
    """What runs: the model (a catalog name, a size such as 70b, or a config.json path) and its workload."""

    model: str
    mode: Mode = Mode.infer
    dtype: str | None = None
    kv_dtype: str | None = None
    batch: int = 1
    prompt_tokens: int = 2048
    output_tokens: int = 256  # the commands' default (request.options.OUTPUT_HELP)
    logits: Logits = Logits.last
    profile: str = "optimized"
    mla_cache: MlaCache | None = None
    group_size: int | None = None
    training: Training = Training()


class EngineKnobs(_Frozen):
    """The serving engine to predict and its own knobs, converted (None: the engine's default)."""

    engine: Engine
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    kv_cache_dtype: str = "auto"
    enforce_eager: bool = False


class Output(_Frozen):
    """How the report is written: format, table units, the arithmetic (``explain``), a file and a chart."""

    format: OutputFormat = OutputFormat.table
    units: Units = Units.gb
    explain: bool = False
    output: Path | None = None
    plot: Path | None = None
    force: bool = False


class EstimateRequest(_Frozen):
    """One estimate: the job, the hardware, the output, and where specs and calibration are read from."""

    job: Job
    hardware: Hardware = Hardware()
    output: Output = Output()
    specs_dir: Path | None = None
    calibration: Path | None = None
    engine: EngineKnobs | None = None
