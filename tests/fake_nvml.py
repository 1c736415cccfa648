"""A stand-in for the ``pynvml`` module: the functions `NvmlProbe` calls, answering from prepared devices.

Like httpx's MockTransport, it implements the real interface one level down, so the probe's own error handling
(unsupported queries, a missing driver) runs in tests. Values are those of the H200 in
tests/data/measured/reference/h200-measured.jsonl unless a test changes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

NVML_CLOCK_MEM = 2
nvmlMemory_v2 = 0x02000028


class NVMLError(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


NOT_SUPPORTED = "Not Supported"
DRIVER_NOT_LOADED = "Driver Not Loaded"
LIBRARY_NOT_FOUND = "NVML Shared Library Not Found"


@dataclass
class FakeDevice:
    name: str = "NVIDIA H200"
    uuid: str = "GPU-cd1bfc2d-f50a-7ef3-197c-f36b4afa1315"
    total: int = 150_754_820_096
    used: int = 644_939_776
    reserved: int | None = 644_939_776
    bus_width: int | None = 6016
    max_mem_clock: int | None = 3201
    mem_clock: int | None = 3201
    pcie_gen: int | None = 5
    pcie_width: int | None = 16
    power_mw: int | None = 700_000
    util: tuple[int, int] | None = (0, 0)
    mig: tuple[int, int] | None = (0, 0)
    processes: list[tuple[int, int | None, str | None]] = field(default_factory=list)


def _value(value: Any) -> Any:
    if value is None:
        raise NVMLError(NOT_SUPPORTED)
    return value


class FakeNvml:
    """Module-like object: ``NvmlProbe(nvml=FakeNvml([...]))``."""

    NVMLError = NVMLError
    NVML_CLOCK_MEM = NVML_CLOCK_MEM
    nvmlMemory_v2 = nvmlMemory_v2

    def __init__(self, devices: list[FakeDevice] | None = None, *, init_error: str | None = None,
                 count_error: str | None = None, driver: str | None = "580.159.04",
                 cuda: int | None = 13000) -> None:
        self.devices = [FakeDevice()] if devices is None else devices
        self.init_error = init_error
        self.count_error = count_error
        self.driver = driver
        self.cuda = cuda
        self.shutdowns = 0

    def nvmlInit(self) -> None:
        if self.init_error:
            raise NVMLError(self.init_error)

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        if self.count_error:
            raise NVMLError(self.count_error)
        return len(self.devices)

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(_value(self.driver))

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return int(_value(self.cuda))

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeDevice:
        return self.devices[index]

    def nvmlDeviceGetName(self, d: FakeDevice) -> bytes:
        return d.name.encode()

    def nvmlDeviceGetUUID(self, d: FakeDevice) -> str:
        return d.uuid

    def nvmlDeviceGetMemoryInfo(self, d: FakeDevice, version: int | None = None) -> SimpleNamespace:
        if version is not None:
            return SimpleNamespace(total=d.total, used=d.used, free=d.total - d.used, reserved=_value(d.reserved))
        return SimpleNamespace(total=d.total, used=d.used, free=d.total - d.used)

    def nvmlDeviceGetMemoryBusWidth(self, d: FakeDevice) -> int:
        return int(_value(d.bus_width))

    def nvmlDeviceGetMaxClockInfo(self, d: FakeDevice, kind: int) -> int:
        assert kind == NVML_CLOCK_MEM
        return int(_value(d.max_mem_clock))

    def nvmlDeviceGetClockInfo(self, d: FakeDevice, kind: int) -> int:
        return int(_value(d.mem_clock))

    def nvmlDeviceGetMaxPcieLinkGeneration(self, d: FakeDevice) -> int:
        return int(_value(d.pcie_gen))

    def nvmlDeviceGetMaxPcieLinkWidth(self, d: FakeDevice) -> int:
        return int(_value(d.pcie_width))

    def nvmlDeviceGetPowerManagementLimit(self, d: FakeDevice) -> int:
        return int(_value(d.power_mw))

    def nvmlDeviceGetUtilizationRates(self, d: FakeDevice) -> SimpleNamespace:
        gpu, memory = _value(d.util)
        return SimpleNamespace(gpu=gpu, memory=memory)

    def nvmlDeviceGetMigMode(self, d: FakeDevice) -> tuple[int, int]:
        mode = _value(d.mig)
        return (int(mode[0]), int(mode[1]))

    def nvmlDeviceGetComputeRunningProcesses(self, d: FakeDevice) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used, _ in d.processes]

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        for d in self.devices:
            for p, _, name in d.processes:
                if p == pid:
                    return str(_value(name))
        raise NVMLError("Not Found")
