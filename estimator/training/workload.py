"""What a training or fine-tuning run is: precision, optimizer, recomputation, sharding, parallel layout, LoRA.

`TrainingWorkload` validates the numbers on their own; `check_layout` validates them against an architecture
(heads divisible by TP, layers by PP) and raises `FieldInvalid` with every problem on one line, located at the
field of the first.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from estimator.catalog.architecture import Architecture
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.specs import NumberFormat
from estimator.errors import FieldInvalid, WorkloadInvalid
from estimator.report import MAX_BATCH, MAX_TOKENS
from estimator.training.pipeline import pipeline_split

Precision = Literal["fp32", "amp-bf16", "amp-fp16", "bf16", "fp8"]
Optimizer = Literal["adamw", "adamw-fused", "adam-8bit", "sgd", "sgd-momentum", "adafactor", "lion"]
Recompute = Literal["none", "selective", "full"]
AttentionImpl = Literal["sdpa", "flash", "eager"]
Fsdp = Literal["full", "grad-op"]
LoraTarget = Literal["q", "k", "v", "o", "gate", "up", "down"]

ALL_LORA_TARGETS: tuple[LoraTarget, ...] = ("q", "k", "v", "o", "gate", "up", "down")
MAX_GPUS = 1_000_000


class TrainingWorkload(BaseModel):
    """One optimizer step: ``grad_accum`` micro-batches of ``batch`` sequences × ``seq_len`` tokens per DP rank.

    ``precision``: ``fp32`` (everything fp32), ``amp-bf16``/``amp-fp16`` (fp32 parameters, 16-bit autocast, as
    PyTorch AMP does; with ZeRO, DeepSpeed's 16-bit parameters + fp32 master), ``bf16`` (parameters, gradients
    and optimizer states all bf16), ``fp8`` (Transformer Engine's recipe under Megatron-LM: FP8 GEMMs, bf16
    parameters, fp32 gradients, master weights and optimizer states; `estimator.training.states`). ``zero``
    1/2/3 shards optimizer states / + gradients / + parameters over
    ``dp`` ranks (Rajbhandari et al. 2020); ``fsdp`` is PyTorch FSDP (``full`` ≈ ZeRO-3, ``grad-op`` ≈ ZeRO-2).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, allow_inf_nan=False)

    batch: int = Field(default=1, ge=1, le=MAX_BATCH)
    seq_len: int = Field(default=2048, ge=1, le=MAX_TOKENS)
    grad_accum: int = Field(default=1, ge=1, le=MAX_BATCH)
    precision: Precision = "amp-bf16"
    optimizer: Optimizer = "adamw"
    recompute: Recompute = "none"
    attention: AttentionImpl = "sdpa"
    zero: Literal[0, 1, 2, 3] = 0
    fsdp: Fsdp | None = None
    dp: int = Field(default=1, ge=1, le=MAX_GPUS)
    tp: int = Field(default=1, ge=1, le=4096)
    pp: int = Field(default=1, ge=1, le=4096)
    cp: int = Field(default=1, ge=1, le=4096)  # context parallel: the sequence split over cp ranks
    ep: int = Field(default=1, ge=1, le=4096)  # expert parallel: MoE experts dealt over ep of the dp ranks
    virtual_stages: int = Field(default=1, ge=1, le=4096)  # interleaved 1F1B: model chunks per pipeline GPU
    sequence_parallel: bool = False
    lora_rank: int | None = Field(default=None, ge=1, le=65_536)
    lora_targets: tuple[LoraTarget, ...] = ALL_LORA_TARGETS
    qlora: NumberFormat | None = None  # the 4-bit base format (NF4 with double quantization in the QLoRA paper)
    profile: EfficiencyProfile

    @model_validator(mode="after")
    def _check(self) -> TrainingWorkload:
        problems = []
        if self.fsdp is not None and self.zero:
            problems.append(FieldInvalid("fsdp", "{fsdp} {kind} and {zero} {stage} are two ways to shard; pick one",
                                         kind=self.fsdp, stage=self.zero))
        if self.virtual_stages > 1 and self.pp == 1:
            problems.append(FieldInvalid("virtual_stages", "{virtual_stages} interleaves pipeline stages; it needs "
                                         "{pp} > 1"))
        if self.cp > 1 and self.profile.train_host_backward_per_layer_s > 0:  # training.eager_step.uses_eager_step
            problems.append(FieldInvalid("cp", "{cp} is Megatron-LM's context parallel; the {name} profile times "
                                         "eager PyTorch steps: use {profile} megatron", name=self.profile.name))
        if self.cp > 1 and self.attention == "eager":
            problems.append(FieldInvalid("cp", "{cp} runs ring attention over flash kernels; use {attention} flash "
                                         "or sdpa"))
        if self.sequence_parallel and self.tp == 1:
            problems.append(FieldInvalid("sequence_parallel", "{sequence_parallel} splits along the tensor-parallel "
                                         "group; it needs {tp} > 1"))
        if self.qlora is not None and self.lora_rank is None:
            problems.append(FieldInvalid("qlora", "{qlora} trains LoRA adapters on a 4-bit base; give {lora_rank}"))
        if self.qlora is not None and self.precision == "fp32":
            problems.append(FieldInvalid("qlora", "{qlora} computes in 16 bit; use {precision} amp-bf16, amp-fp16 "
                                         "or bf16"))
        if self.precision == "fp8" and self.shard_stage == 3:
            problems.append(FieldInvalid("precision", "{precision} fp8 with ZeRO-3 / FSDP full shard is not modelled "
                                         "(FP8 copies of sharded weights); use {zero} 1 (Megatron's distributed "
                                         "optimizer) or {zero} 2"))
        problems += self._expert_problems()
        if not self.lora_targets:
            problems.append(FieldInvalid("lora_targets", "{lora_targets} is empty"))
        if len(set(self.lora_targets)) != len(self.lora_targets):
            problems.append(FieldInvalid("lora_targets", "{lora_targets} repeats a target: {targets}",
                                         targets=",".join(self.lora_targets)))
        if problems:
            raise FieldInvalid.joined(problems)  # a ValueError: pydantic reports it, the error kept in its context
        return self

    def _expert_problems(self) -> list[FieldInvalid]:
        """What expert parallel is not modelled with (Megatron-LM's expert-model-parallel takes its ranks from
        data parallel: ep must divide dp)."""
        if self.ep == 1:
            return []
        problems = [] if self.dp % self.ep == 0 else [
            FieldInvalid("ep", "{ep} {count} must divide {dp} {dp_count}: expert parallel deals the experts over "
                         "data-parallel ranks", count=self.ep, dp_count=self.dp)]
        unmodelled = [name for name, on in (("ZeRO-3 / FSDP full shard", self.shard_stage == 3),
                                            ("LoRA", self.lora_rank is not None), ("{cp}", self.cp > 1),
                                            ("{optimizer} adafactor", self.optimizer == "adafactor")) if on]
        return problems + [FieldInvalid("ep", "{ep} with " + name + " is not modelled") for name in unmodelled]

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def reduce_group(self) -> int:
        """Ranks a gradient is reduced (and ZeRO shards) over: data-parallel × context-parallel (Megatron-LM's
        DP-CP group: every CP rank holds the whole model and a part of the sequence)."""
        return self.dp * self.cp

    @property
    def lora(self) -> bool:
        return self.lora_rank is not None

    @property
    def amp(self) -> bool:
        """Autocast: fp32 parameters, 16-bit matmuls."""
        return self.precision.startswith("amp")

    @property
    def fp8(self) -> bool:
        """FP8 GEMMs (Transformer Engine); attention and the elementwise kernels stay in bf16."""
        return self.precision == "fp8"

    @property
    def compute_dtype(self) -> Literal["fp32", "bf16", "fp16"]:
        return "fp32" if self.precision == "fp32" else "fp16" if self.precision == "amp-fp16" else "bf16"

    @property
    def shard_stage(self) -> int:
        """0 none, 1 optimizer states, 2 + gradients, 3 + parameters (FSDP full = 3, grad-op = 2)."""
        if self.fsdp is not None:
            return 3 if self.fsdp == "full" else 2
        return self.zero

    @property
    def tokens_per_micro_batch(self) -> int:
        """Tokens of one micro-batch on one GPU: a context-parallel rank holds 1/cp of each sequence."""
        return self.batch * self.seq_len // self.cp


def parse_lora_targets(text: str) -> tuple[LoraTarget, ...]:
    """``q,v`` or ``all`` → targets; names may carry ``_proj`` (``q_proj,v_proj``)."""
    if text.strip().lower() == "all":
        return ALL_LORA_TARGETS
    out: list[LoraTarget] = []
    for raw in text.split(","):
        name = raw.strip().lower().removesuffix("_proj")
        if name not in ALL_LORA_TARGETS:
            raise WorkloadInvalid(f"unknown LoRA target {raw.strip()!r}; use 'all' or a comma list of "
                                  + ", ".join(ALL_LORA_TARGETS))
        out.append(name)
    return tuple(out)


def check_layout(arch: Architecture, w: TrainingWorkload) -> None:
    """Reject layouts that cannot run: TP must split heads (and KV heads), PP must split layers evenly."""
    problems = []
    heads, kv = arch.attention.num_heads, arch.attention.num_kv_heads
    if heads % w.tp:
        problems.append(_said("tp", f"tensor parallel {w.tp} does not divide {heads} attention heads"))
    elif kv % w.tp and w.tp % kv:
        problems.append(_said("tp", f"tensor parallel {w.tp} neither divides nor is a multiple of {kv} KV heads"))
    if pipeline_split(arch.num_layers, w.pp) is None:
        problems.append(_said("pp", f"pipeline parallel {w.pp} divides neither the {arch.num_layers} layers nor "
                                    f"{arch.num_layers} + 2 (Megatron-core's split counting the embedding and the "
                                    "output layer as a layer each)"))
    elif w.virtual_stages > 1 and arch.num_layers % (w.pp * w.virtual_stages):
        problems.append(_said("pp", f"pipeline parallel {w.pp} × {w.virtual_stages} virtual stages does not divide "
                                    f"{arch.num_layers} layers"))
    if w.virtual_stages > 1 and w.grad_accum % w.pp:
        problems.append(FieldInvalid("grad_accum", "the interleaved schedule needs micro-batches ({grad_accum} "
                                     "{count}) divisible by pipeline parallel {pp_count} (Megatron-LM's rule)",
                                     count=w.grad_accum, pp_count=w.pp))
    if w.ep > 1 and (arch.moe is None or not arch.num_moe_layers):
        problems.append(_said("ep", f"expert parallel {w.ep}: the model has no mixture-of-experts layers"))
    elif w.ep > 1 and arch.moe is not None and arch.moe.num_experts % w.ep:
        problems.append(_said("ep", f"expert parallel {w.ep} does not divide the {arch.moe.num_experts} routed "
                                    "experts"))
    if w.cp > 1 and w.seq_len % (2 * w.cp):  # Megatron-LM's load balance: 2 × cp chunks, each rank two
        problems.append(_said("cp", f"context parallel {w.cp} needs seq_len ({w.seq_len}) divisible by 2 × cp = "
                                    f"{2 * w.cp}"))
    elif w.sequence_parallel and (w.seq_len // w.cp) % w.tp:
        problems.append(_said("sequence_parallel", f"sequence parallel needs seq_len ({w.seq_len}) divisible by tp "
                                                   f"({w.tp})" + (f" × cp ({w.cp})" if w.cp > 1 else "")))
    if problems:
        raise FieldInvalid.joined(problems)


def _said(field: str, message: str) -> FieldInvalid:
    """A refusal of ``field`` whose message names no other field (worded alike by every front end)."""
    return FieldInvalid(field, "{message}", message=message)
