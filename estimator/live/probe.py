"""The live GPU, read through NVML behind a small interface, and matched to the catalog.

`GpuProbe` is the interface; `NvmlProbe` implements it with ``pynvml`` (nvidia-ml-py), and `FakeProbe` returns
prepared readings so every command runs in tests without a GPU. A field the driver does not support (NVML's
``NotSupported``) is ``None`` and named in `LiveGpu.unavailable`; a missing library or driver is
`DeviceUnavailable`.

Implied bandwidth = bus width / 8 × max memory clock × 2 (double data rate): an H200 reports a 6016-bit bus and a
3,201 MHz clock, 752 B × 6,402 MT/s = 4.814 TB/s.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pydantic import computed_field

from estimator.catalog.registry import Catalog
from estimator.catalog.specs import GpuSpec
from estimator.errors import DeviceUnavailable
from estimator.report import Frozen, Versioned
from estimator.units import MIB


class GpuProcess(Frozen):
    """A process holding memory on a GPU, as NVML lists it."""

    pid: int
    name: str | None
    used_bytes: int | None


class LiveGpu(Frozen):
    """One visible GPU at one moment. ``None`` means the driver could not say (see ``unavailable``)."""

    index: int
    name: str
    uuid: str | None
    memory_total_bytes: int
    memory_used_bytes: int
    memory_free_bytes: int
    memory_reserved_bytes: int | None  # driver/firmware reservation (NVML memory info v2), counted in "used"
    bus_width_bits: int | None
    max_mem_clock_mhz: int | None
    mem_clock_mhz: int | None
    pcie_gen_max: int | None
    pcie_width_max: int | None
    power_limit_w: float | None
    utilization_gpu_pct: int | None
    utilization_memory_pct: int | None
    mig_enabled: bool | None
    processes: tuple[GpuProcess, ...] = ()
    unavailable: tuple[str, ...] = ()

    @computed_field  # type: ignore[prop-decorator]  # mypy does not know pydantic's decorator over a property
    @property
    def implied_bandwidth_bytes_per_s(self) -> float | None:
        """bus / 8 × max memory clock × 2 (NVML reports the memory clock at half the data rate)."""
        if self.bus_width_bits is None or self.max_mem_clock_mhz is None:
            return None
        return self.bus_width_bits / 8 * self.max_mem_clock_mhz * 1e6 * 2

    @property
    def bandwidth_arithmetic(self) -> str | None:
        """The implied bandwidth as the arithmetic people can check."""
        bw = self.implied_bandwidth_bytes_per_s
        if bw is None:
            return None
        return (f"{self.bus_width_bits} bit / 8 × {self.max_mem_clock_mhz:,} MHz × 2 = {bw / 1e12:.3f} TB/s")


class Snapshot(Frozen):
    """Everything one probe reading returns: driver facts and every visible GPU."""

    driver_version: str | None
    cuda_driver_version: str | None  # e.g. "13.0"
    gpus: tuple[LiveGpu, ...]


class GpuProbe(Protocol):
    """Reads the live devices. Raises `DeviceUnavailable` when there is no library, driver or GPU."""

    def read(self) -> Snapshot: ...

    def close(self) -> None: ...


class FakeProbe:
    """A probe that returns prepared snapshots in turn (the last one repeats) or raises a prepared error."""

    def __init__(self, snapshots: Sequence[Snapshot] = (), error: Exception | None = None) -> None:
        if not snapshots and error is None:
            raise ValueError("FakeProbe needs snapshots or an error")
        self._snapshots = list(snapshots)
        self._error = error
        self.reads = 0
        self.closed = False

    def read(self) -> Snapshot:
        if self._error is not None:
            raise self._error
        snapshot = self._snapshots[min(self.reads, len(self._snapshots) - 1)]
        self.reads += 1
        return snapshot

    def close(self) -> None:
        self.closed = True


_UNAVAILABLE_HINT = {
    "Driver Not Loaded": "the NVIDIA driver is not loaded (is this machine's GPU visible? try nvidia-smi)",
    "NVML Shared Library Not Found": "libnvidia-ml.so was not found: no NVIDIA driver is installed here",
    "No permission": "no permission to read the GPU through NVML",
}


class NvmlProbe:
    """`GpuProbe` through NVML. ``nvml`` is the ``pynvml`` module, or a fake with the same functions in tests."""

    def __init__(self, nvml: Any = None) -> None:
        if nvml is None:
            try:
                import pynvml  # type: ignore[import-untyped,unused-ignore]  # nvidia-ml-py (a core dependency)

                nvml = pynvml
            except ImportError:  # pragma: no cover - core dependency
                from estimator.errors import MissingDependency

                raise MissingDependency("nvidia-ml-py is not installed: pip install nvidia-ml-py") from None
        self._nvml = nvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as error:
            text = str(error)
            raise DeviceUnavailable(f"cannot read the GPU through NVML: {_UNAVAILABLE_HINT.get(text, text)}") from None
        self._open = True

    def close(self) -> None:
        if self._open:
            self._open = False
            with contextlib.suppress(self._nvml.NVMLError):
                self._nvml.nvmlShutdown()

    def _try(self, missing: list[str], what: str, call: Callable[[], Any]) -> Any:
        """Run one NVML query; an unsupported or failing query becomes None and is recorded in ``missing``."""
        try:
            return call()
        except self._nvml.NVMLError as error:
            missing.append(f"{what}: {error}")
            return None

    def read(self) -> Snapshot:
        nvml = self._nvml
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as error:
            raise DeviceUnavailable(f"cannot list GPUs through NVML: {error}") from None
        if count == 0:
            raise DeviceUnavailable("NVML sees no GPU on this machine")
        driver_missing: list[str] = []
        driver = self._try(driver_missing, "driver version", nvml.nvmlSystemGetDriverVersion)
        cuda = self._try(driver_missing, "CUDA version", nvml.nvmlSystemGetCudaDriverVersion)
        gpus = tuple(self._gpu(i) for i in range(count))
        return Snapshot(driver_version=None if driver is None else _text(driver),
                        cuda_driver_version=None if cuda is None else f"{cuda // 1000}.{cuda % 1000 // 10}",
                        gpus=gpus)

    def _process_name(self, pid: int) -> str | None:
        try:
            return _text(self._nvml.nvmlSystemGetProcessName(pid))
        except self._nvml.NVMLError:
            return None

    def _gpu(self, index: int) -> LiveGpu:
        nvml = self._nvml
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = _text(nvml.nvmlDeviceGetName(handle))
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
        except nvml.NVMLError as error:
            raise DeviceUnavailable(f"cannot read GPU {index} through NVML: {error}") from None
        missing: list[str] = []
        uuid = self._try(missing, "UUID", lambda: _text(nvml.nvmlDeviceGetUUID(handle)))
        v2 = self._try(missing, "memory info v2 (driver reserved)",
                       lambda: nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2))
        bus = self._try(missing, "memory bus width", lambda: nvml.nvmlDeviceGetMemoryBusWidth(handle))
        max_clock = self._try(missing, "max memory clock",
                              lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM))
        clock = self._try(missing, "memory clock", lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM))
        gen = self._try(missing, "PCIe generation", lambda: nvml.nvmlDeviceGetMaxPcieLinkGeneration(handle))
        width = self._try(missing, "PCIe width", lambda: nvml.nvmlDeviceGetMaxPcieLinkWidth(handle))
        power = self._try(missing, "power limit", lambda: nvml.nvmlDeviceGetPowerManagementLimit(handle))
        util = self._try(missing, "utilization", lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
        mig = self._try(missing, "MIG mode", lambda: nvml.nvmlDeviceGetMigMode(handle))
        procs = self._try(missing, "processes", lambda: nvml.nvmlDeviceGetComputeRunningProcesses(handle)) or []
        processes = []
        for p in procs:
            pname = self._process_name(int(p.pid))
            used = getattr(p, "usedGpuMemory", None)
            processes.append(GpuProcess(pid=int(p.pid), name=pname or None,
                                        used_bytes=None if used is None or used < 0 or used >= 2**63 else int(used)))
        return LiveGpu(
            index=index, name=name, uuid=uuid,
            memory_total_bytes=int(memory.total), memory_used_bytes=int(memory.used),
            memory_free_bytes=int(memory.free),
            memory_reserved_bytes=None if v2 is None else int(v2.reserved),
            bus_width_bits=bus, max_mem_clock_mhz=max_clock, mem_clock_mhz=clock,
            pcie_gen_max=gen, pcie_width_max=width,
            power_limit_w=None if power is None else power / 1000,
            utilization_gpu_pct=None if util is None else int(util.gpu),
            utilization_memory_pct=None if util is None else int(util.memory),
            mig_enabled=None if mig is None else bool(mig[0]),
            processes=tuple(processes), unavailable=tuple(missing),
        )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# Catalog matching ------------------------------------------------------------------------------------------

_FORM = {"sxm", "sxm2", "sxm4", "sxm5", "pcie", "nvl"}
_NOISE = {"nvidia", "tesla", "geforce", "generation", "gpu", "hbm3", "hbm3e", "hbm2e", "per", "blackwell",
          "workstation", "server", "edition"}
_SIZE = re.compile(r"^\d+gb$")


def _tokens(name: str) -> set[str]:
    return {t for t in re.split(r"[\s\-_/(),]+", name.lower()) if t}


def _core(tokens: set[str]) -> set[str]:
    return {t for t in tokens if t not in _FORM and t not in _NOISE and not _SIZE.match(t)}


def _form(tokens: set[str]) -> str | None:
    for t in tokens:
        if t in _FORM:
            return "sxm" if t.startswith("sxm") else t
    return None


def match_catalog(gpu: LiveGpu, catalog: Catalog) -> GpuSpec | None:
    """The catalog card this live GPU is: same model tokens and form factor in the name, closest memory size.

    NVML names the form factor only for PCIe and NVL parts ("NVIDIA H100 PCIe", "NVIDIA H200 NVL"); a name
    without one is the SXM part. Memory must be within 10% of the spec (the reported MiB when the spec has it),
    which separates e.g. A100 40GB from 80GB.
    """
    live = _tokens(gpu.name)
    core, form = _core(live), _form(live) or "sxm"
    if not core:
        return None
    best: tuple[float, GpuSpec] | None = None
    for spec in catalog.gpus:
        if spec.vendor != "nvidia":
            continue
        names = [_tokens(n) for n in (spec.name, *spec.aliases)]
        if not any(_core(n) == core for n in names):
            continue
        spec_form = _form(_tokens(spec.name))
        if spec_form is not None and spec_form != form:
            continue
        gap = abs(spec.memory_bytes - gpu.memory_total_bytes) / spec.memory_bytes
        if gap <= 0.10 and (best is None or gap < best[0]):
            best = (gap, spec)
    return None if best is None else best[1]


class Comparison(Frozen):
    """One quantity from the datasheet beside what the device reports."""

    quantity: str
    unit: str
    spec: float | None
    live: float | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def difference(self) -> float | None:
        """(live − spec) / spec."""
        if self.spec is None or self.live is None or self.spec == 0:
            return None
        return (self.live - self.spec) / self.spec


def compare_with_spec(gpu: LiveGpu, spec: GpuSpec) -> tuple[Comparison, ...]:
    """Memory, bus width, memory bandwidth, power: spec value, live value (difference computed on demand)."""
    return (
        Comparison(quantity="memory total", unit="MiB",
                   spec=spec.memory_bytes / MIB, live=gpu.memory_total_bytes / MIB),
        Comparison(quantity="memory bus width", unit="bit", spec=spec.bus_width_bits,
                   live=gpu.bus_width_bits),
        Comparison(quantity="memory bandwidth", unit="GB/s", spec=spec.bandwidth_gb_per_s,
                   live=None if gpu.implied_bandwidth_bytes_per_s is None else gpu.implied_bandwidth_bytes_per_s / 1e9),
        Comparison(quantity="power limit", unit="W", spec=spec.tdp_w, live=gpu.power_limit_w),
    )


class GpuReading(LiveGpu):
    """One GPU as `estimator gpu --format json` prints it: the reading, its catalog match and the comparison."""

    catalog_match: str | None  # the catalog card's name, or None when no card matches name and memory size
    comparison: tuple[Comparison, ...]  # empty without a match


class GpuReport(Versioned):
    """The snapshot in base units, each GPU with its catalog match."""

    driver_version: str | None
    cuda_driver_version: str | None
    gpus: tuple[GpuReading, ...]


def gpu_report(snapshot: Snapshot, catalog: Catalog) -> GpuReport:
    """The report of one reading: every GPU matched to the catalog and compared with its datasheet."""
    readings = []
    for gpu in snapshot.gpus:
        spec = match_catalog(gpu, catalog)
        readings.append(GpuReading(**dict(gpu), catalog_match=None if spec is None else spec.name,
                                   comparison=() if spec is None else compare_with_spec(gpu, spec)))
    return GpuReport(driver_version=snapshot.driver_version, cuda_driver_version=snapshot.cuda_driver_version,
                     gpus=tuple(readings))
