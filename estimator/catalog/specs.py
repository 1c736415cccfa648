"""Validated specifications: GPUs, weight/KV number formats, and model architectures.

Spec files use the vendor's decimal units in their key names (``memory_gb``, ``bandwidth_gb_per_s``,
``dense_tflop_per_s``); the properties here convert once, to bytes, bytes/s and FLOP/s.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from estimator.errors import FieldInvalid
from estimator.units import GIB, GIGA, MIB, TERA

# The memory technology (it selects the efficiency profile's bandwidth fraction). Whether CPU and GPU share the
# memory is a separate key, `unified_memory`: an M4 Max is LPDDR5X and unified, an MI300A HBM3 and unified.
MemoryType = Literal["GDDR6", "GDDR6X", "GDDR7", "HBM2", "HBM2e", "HBM3", "HBM3e", "LPDDR5", "LPDDR5X"]
Vendor = Literal["nvidia", "amd", "intel", "apple", "google"]
ComputeDType = Literal["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4", "int4"]

BANDWIDTH_TOLERANCE = 0.03  # bus × rate may differ from the vendor figure by 3% (rounding of rates)


# Ceilings of the spec fields, each past any real part by orders of magnitude (the fuzz campaign fed `.inf` and
# 1e300 through specs; every number read is finite and physical). Stated in the shipped schemas (docs/schema/specs).
MAX_MEMORY_MIB = 10_000_000  # memory_gb's 10,000 GB in MiB, rounded up (an H200 reports 143,771 MiB)
MAX_BUS_BITS = 65_536  # memory bus width: 8 HBM stacks × 1,024 bits is 8,192 today
MAX_TFLOP_PER_S = 1_000_000  # dense peak per GPU, 1 EFLOP/s: a B200 is about 9,000 TFLOP/s at fp4
MAX_TDP_W = 10_000  # one board: a B200 is 1,000 W, a GB200 superchip 2,700 W
MAX_LINK_GB_PER_S = 100_000  # per GPU per direction, as systems' link_gb_per_s (NVLink 5 is 900 GB/s)
MAX_CARD_USD = 100_000_000  # one card's price: an H100 is about $30,000
MIN_YEAR, MAX_YEAR = 1990, 2100  # a release year (the oldest card listed is from 2014)
MAX_GROUP_SIZE = 2**24  # weights per quantization group: at most a row, MAX_WIDTH wide (128 is usual)
MAX_GROUP_OVERHEAD_BITS = 1_024  # scale + zero point per group: two fp32 are 64 bits
MAX_ELEMENTS = 10**15  # a checkpoint role's elements: architecture's MAX_PARAMS
MAX_STORED_BYTES = 8 * 10**15  # those elements at 8 bytes (fp64)

Elements = Annotated[int, Field(ge=0, le=MAX_ELEMENTS)]
StoredBytes = Annotated[int, Field(ge=0, le=MAX_STORED_BYTES)]


def refuse(problems: list[str], sources: tuple[str, ...]) -> None:
    """Raise every problem of a sourced spec (a GPU, a system) as one error, an empty source among them, so a file
    with several mistakes names them all at once."""
    if any(not s.strip() for s in sources):
        problems.append("sources must not contain empty entries")
    if problems:
        raise ValueError("; ".join(problems))


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, allow_inf_nan=False)


class GpuSpec(_Spec):
    """One accelerator, as its datasheet describes it (see specs/README.md for every key)."""

    name: str = Field(min_length=1)
    aliases: tuple[str, ...] = ()
    vendor: Vendor
    memory_type: MemoryType
    memory_gb: float = Field(gt=0, le=10_000)
    memory_gib: float | None = Field(default=None, gt=0, le=10_000)
    reported_memory_mib: int | None = Field(default=None, gt=0, le=MAX_MEMORY_MIB)
    unified_memory: bool = False
    gpu_memory_mib: int | None = Field(default=None, gt=0, le=MAX_MEMORY_MIB)
    bus_width_bits: int = Field(gt=0, le=MAX_BUS_BITS)
    data_rate_gbps: float = Field(gt=0, le=100)
    bandwidth_gb_per_s: float = Field(gt=0, le=100_000)
    bandwidth_mismatch_reason: str | None = None
    dense_tflop_per_s: dict[ComputeDType, Annotated[float, Field(le=MAX_TFLOP_PER_S)]]
    tdp_w: float | None = Field(default=None, gt=0, le=MAX_TDP_W)
    interconnect: str
    interconnect_gb_per_s: float | None = Field(default=None, gt=0, le=MAX_LINK_GB_PER_S)
    year: int | None = Field(default=None, ge=MIN_YEAR, le=MAX_YEAR)
    price_usd: float | None = Field(default=None, gt=0, le=MAX_CARD_USD)
    price_date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}$")
    notes: str | None = None
    sources: tuple[str, ...] = Field(min_length=1)
    _memory_override: int | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self) -> GpuSpec:
        problems = self._memory_problems()
        derived = self.derived_bandwidth_gb_per_s
        mismatch = abs(derived - self.bandwidth_gb_per_s) / self.bandwidth_gb_per_s
        if mismatch > BANDWIDTH_TOLERANCE and not self.bandwidth_mismatch_reason:
            problems.append(
                f"bus {self.bus_width_bits} bit × {self.data_rate_gbps} Gbps = {derived:,.0f} GB/s differs from the"
                f" vendor's {self.bandwidth_gb_per_s:,.0f} GB/s by {mismatch:.1%} (> 3%) and"
                " bandwidth_mismatch_reason is not given"
            )
        if not self.dense_tflop_per_s:
            problems.append("dense_tflop_per_s is empty")
        if any(v <= 0 for v in self.dense_tflop_per_s.values()):
            problems.append("dense_tflop_per_s values must be positive")
        if self.price_usd is not None and self.price_date is None:
            problems.append("price_usd needs price_date (YYYY-MM)")
        refuse(problems, self.sources)
        return self

    def _memory_problems(self) -> list[str]:
        problems = []
        if self.unified_memory and self.gpu_memory_mib is None:
            problems.append("unified_memory needs gpu_memory_mib: the share of it the GPU may use, with its source")
        if self.gpu_memory_mib is not None and not self.unified_memory:
            problems.append("gpu_memory_mib is for unified_memory machines; a card's own total is reported_memory_mib")
        if self.gpu_memory_mib is not None and self.gpu_memory_mib * MIB > self.memory_gb * GIB:
            problems.append(f"gpu_memory_mib {self.gpu_memory_mib:,} is more than the {self.memory_gb:g} GB installed")
        for key, value in (("reported_memory_mib", self.reported_memory_mib), ("memory_gib", self.memory_gib)):
            if value is None or self.unified_memory:
                continue
            ratio = value * (MIB if key == "reported_memory_mib" else GIB) / (self.memory_gb * GIGA)
            if not 0.9 <= ratio <= 1.1:
                problems.append(f"{key} {value:,g} is {ratio:.0%} of the marketed {self.memory_gb:g} GB (a typo?)")
        return problems

    @property
    def derived_bandwidth_gb_per_s(self) -> float:
        """Bus width / 8 × per-pin data rate, in GB/s (the rate is already the effective DDR rate)."""
        return self.bus_width_bits / 8 * self.data_rate_gbps

    @property
    def memory_bytes(self) -> int:
        """Usable capacity: ``--gpu-memory`` when given; on a unified-memory machine the share the GPU may use;
        else what the device reports (nvidia-smi, rocm-smi, hl-smi total); else the vendor's binary GiB figure;
        else the marketed decimal capacity."""
        if self._memory_override is not None:
            return self._memory_override
        if self.gpu_memory_mib is not None:
            return self.gpu_memory_mib * MIB
        if self.reported_memory_mib is not None:
            return self.reported_memory_mib * MIB
        if self.memory_gib is not None:
            return round(self.memory_gib * GIB)
        return round(self.memory_gb * GIGA)

    def with_memory(self, memory_bytes: int) -> GpuSpec:
        """The same card with a usable capacity the user states (``gpu_memory``), e.g. a Mac whose wired limit
        was raised, or a card shared with another job. It cannot exceed what is installed (the marketed GB read
        as GiB, the larger of the two)."""
        installed = round(self.memory_gb * GIB)
        if not 0 < memory_bytes <= installed:
            raise FieldInvalid("gpu_memory", "{gpu_memory} must be positive and at most the {installed} GB installed "
                               "on {name}, got {size} B", installed=f"{self.memory_gb:g}", name=self.name,
                               size=f"{memory_bytes:,}")
        copy = self.model_copy()
        copy._memory_override = memory_bytes
        return copy

    @property
    def capacity_source(self) -> Literal["override", "unified-share", "reported", "installed-gib", "marketed"]:
        """Which figure `memory_bytes` is: the --gpu-memory override, the unified-memory share, the device's
        report, the installed GiB, or the marketed GB."""
        if self._memory_override is not None:
            return "override"
        if self.gpu_memory_mib is not None:
            return "unified-share"
        if self.reported_memory_mib is not None:
            return "reported"
        return "installed-gib" if self.memory_gib is not None else "marketed"

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """The vendor's peak memory bandwidth in bytes per second."""
        return self.bandwidth_gb_per_s * GIGA

    @property
    def interconnect_bytes_per_s(self) -> float | None:
        """GPU-to-GPU bandwidth (bidirectional total per GPU) in bytes per second, when known."""
        return None if self.interconnect_gb_per_s is None else self.interconnect_gb_per_s * GIGA

    def peak_flop_per_s(self, dtype: ComputeDType) -> float | None:
        """Dense peak FLOP/s for ``dtype``; bf16 falls back to fp16 only where the card lists no bf16."""
        tflops = self.dense_tflop_per_s.get(dtype)
        return None if tflops is None else tflops * TERA


class NumberFormat(_Spec):
    """A storage format for weights or KV cache: plain dtypes and quantization schemes (specs/quant/)."""

    name: str
    aliases: tuple[str, ...] = ()
    description: str
    bits_per_weight: float = Field(gt=0, le=64)
    compute_dtype: ComputeDType
    scope: Literal["all", "linear", "experts"]  # experts: routed experts only (gpt-oss MXFP4 checkpoints)
    group_size: int | None = Field(default=None, gt=0, le=MAX_GROUP_SIZE)
    group_overhead_bits: float | None = Field(default=None, ge=0, le=MAX_GROUP_OVERHEAD_BITS)
    kv_cache: bool = False
    sources: tuple[str, ...] = Field(min_length=1)
    # a checkpoint's own bytes (its file headers): (role, elements, bytes) per role, which then decide every
    # tensor's bits (bytes × 8 / elements) in place of bits_per_weight and scope
    stored_roles: tuple[tuple[str, Elements, StoredBytes], ...] = ()

    def with_group_size(self, group_size: int) -> NumberFormat:
        """The same grouped format with another group size: overhead bits are spread over the new group."""
        if self.group_size is None or self.group_overhead_bits is None:
            raise ValueError(f"format {self.name} has no group size")
        if group_size < 1:
            raise ValueError(f"a group holds at least one weight, got group size {group_size}")
        base_bits = self.bits_per_weight - self.group_overhead_bits / self.group_size
        return self.model_copy(
            update={"group_size": group_size, "bits_per_weight": base_bits + self.group_overhead_bits / group_size}
        )
