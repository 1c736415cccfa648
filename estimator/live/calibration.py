"""Calibration files: what `estimator calibrate` measured on a card, and the profile values it implies.

A file (YAML, read with safe_load) holds one entry per GPU, keyed by the name NVML reports::

    schema_version: 1
    gpus:
      NVIDIA H200:
        catalog_gpu: NVIDIA H200 SXM 141GB
        gemv_bytes_per_s: 3.97e12
        ...
        profile_overrides: {bandwidth_efficiency: 0.83, matmul_flop_efficiency: 0.77, per_layer_step_s: 3.1e-05, ...}

`estimate --calibration FILE` applies the entry for the requested card to the chosen efficiency profile; without
the option, ``<user config dir>/estimator/calibration.yaml`` (platformdirs) is used when it has an entry for that
card. Hardware facts are overridden (bandwidth and matmul fractions, per-layer graph cost, context, workspace and
driver reservation; the matmul fraction relative to the profile's `matmul_reference_efficiency` where it states
one), and the host's cost per dispatched operation (`estimator.live.host_cost`) where the profile has
a host floor counted in operations: its ``host_per_op_s`` becomes the measured one and its other host figures
(per layer, per training phase, per optimizer step) scale by the same ratio, since they are the same dispatch
measured on another machine's host. Software traits of a profile (operations per layer, KV read path) stay.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationError

from estimator.catalog.files import read_mapping
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.specs import GpuSpec
from estimator.errors import FieldInvalid, SpecInvalid
from estimator.report import Frozen

CALIBRATION_FILE_VERSION = 1  # the file format's version: an input file, not a report (see estimator.report)
FILE_NAME = "calibration.yaml"

# Profile fields a calibration may set: facts of the card and its driver, not of the software stack.
OVERRIDABLE = ("bandwidth_efficiency", "matmul_flop_efficiency", "per_layer_step_s", "cuda_context_bytes",
               "workspace_bytes", "driver_reserved_fraction", "host_per_op_s")
# A profile's host figures besides host_per_op_s: each is host dispatch measured at the host speed the profile's
# host_per_op_s was fitted at, so a measured cost per operation scales them all by the same ratio.
HOST_SCALED = ("host_per_layer_s", "host_fixed_s", "host_prologue_s", "train_host_forward_s",
               "train_host_forward_per_layer_s", "train_host_backward_per_layer_s",
               "train_host_checkpointed_forward_per_layer_s", "train_host_checkpointed_backward_per_layer_s",
               "train_host_forward_per_op_s", "train_host_backward_per_op_s",
               "train_host_checkpointed_forward_per_op_s", "train_host_checkpointed_backward_per_op_s",
               "optimizer_host_s", "optimizer_host_per_tensor_s")


# Ceilings of what a calibration file may say, each past any card by orders of magnitude (the file is read without
# being named, so a corrupt one must be refused, not estimated with): stated in docs/schema/specs/calibration.json.
MAX_BYTES = 10**13  # memory and its reservations: 10,000 GB, GpuSpec.memory_gb's ceiling (an H200 has 150.8e9)
MAX_BYTES_PER_S = 1e15  # 1 PB/s: an H200 reads 4.8e12 B/s
MAX_FLOP_PER_S = 1e18  # 1 EFLOP/s, GpuSpec's 1,000,000 TFLOP/s
MAX_SECONDS = 1.0  # one graph kernel or one layer of a decode step: measured ones are microseconds
Bytes = Annotated[int, Field(ge=0, le=MAX_BYTES)]
Rate = Annotated[float, Field(gt=0, le=MAX_BYTES_PER_S)]
Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS)]


class GpuCalibration(Frozen):
    """Measurements on one card and the profile values derived from them."""

    gpu: str
    catalog_gpu: str | None
    measured_at: str
    software: dict[str, str] = Field(default_factory=dict)
    memory_total_bytes: int = Field(gt=0, le=MAX_BYTES)
    copy_bytes_per_s: Rate
    read_bytes_per_s: Rate
    gemv_bytes_per_s: Rate
    matmul_flop_per_s: dict[str, Annotated[float, Field(gt=0, le=MAX_FLOP_PER_S)]]
    driver_reserved_bytes: Bytes
    cuda_context_bytes: Bytes
    workspace_bytes: Bytes
    graph_kernel_s: Seconds
    graph_layer_s: Seconds
    graph_bandwidth_bytes_per_s: Rate
    # the host's cost per operation (estimator.live.host_cost); absent from files written before it was measured
    host_bare_op_s: Seconds | None = None
    host_per_op_s: Seconds | None = None
    # fractions, seconds and bytes (OVERRIDABLE); each is checked again by the profile it goes into
    profile_overrides: dict[str, Annotated[float, Field(ge=0, le=MAX_BYTES)]]


class CalibrationFile(Frozen):
    schema_version: int = Field(default=CALIBRATION_FILE_VERSION, ge=1, le=1_000)  # must equal the version
    gpus: dict[str, GpuCalibration] = Field(default_factory=dict)


def derive_overrides(cal: dict[str, Any], spec: GpuSpec | None, memory_total_bytes: int) -> dict[str, float]:
    """Profile values from raw measurements: fractions are measured rate ÷ the catalog's peak for this card.

    bandwidth_efficiency  = lean graph decode's bandwidth term ÷ spec bandwidth (what weight streaming achieves)
    matmul_flop_efficiency = bf16 matmul rate ÷ spec bf16 peak
    per_layer_step_s      = lean graph decode's fixed cost per layer
    driver_reserved_fraction = NVML reservation ÷ total; context and workspace bytes as measured;
    host_per_op_s         = a transformers layer's host seconds per operation, where it was measured.
    """
    out: dict[str, float] = {
        "per_layer_step_s": float(cal["graph_layer_s"]),
        "cuda_context_bytes": int(cal["cuda_context_bytes"]),
        "workspace_bytes": int(cal["workspace_bytes"]),
        "driver_reserved_fraction": cal["driver_reserved_bytes"] / memory_total_bytes,
    }
    if cal.get("host_per_op_s"):
        out["host_per_op_s"] = float(cal["host_per_op_s"])
    if spec is not None:
        out["bandwidth_efficiency"] = min(1.0, cal["graph_bandwidth_bytes_per_s"] / spec.bandwidth_bytes_per_s)
        peak = spec.peak_flop_per_s("bf16") or spec.peak_flop_per_s("fp16")
        rate = cal["matmul_flop_per_s"].get("bf16") or cal["matmul_flop_per_s"].get("fp16")
        if peak and rate:
            out["matmul_flop_efficiency"] = min(1.0, rate / peak)
    return out


def load_calibration(path: Path) -> CalibrationFile:
    """Read and validate a calibration file; any problem is one `SpecInvalid` naming the file."""
    data = read_mapping(path, "calibration file")
    try:
        file = CalibrationFile.model_validate(data)
    except ValidationError as error:
        from estimator.catalog.registry import validation_message

        raise SpecInvalid(f"{path}: {validation_message(error)}") from None
    if file.schema_version != CALIBRATION_FILE_VERSION:
        raise SpecInvalid(f"{path}: calibration schema_version {file.schema_version} is not "
                          f"{CALIBRATION_FILE_VERSION}")
    for name, entry in file.gpus.items():
        unknown = sorted(set(entry.profile_overrides) - set(OVERRIDABLE))
        if unknown:
            raise SpecInvalid(f"{path}: gpus.{name}.profile_overrides: unknown keys {', '.join(unknown)}")
    return file


def check_calibration_target(path: Path, gpu: str, *, force: bool) -> None:
    """Refuse, before a card is measured, a write that would lose work: replacing the entry ``path`` already holds
    for ``gpu``, or a file that is no calibration file, unless ``force``. Adding another card's entry is the file's
    purpose (one file holds every card) and needs no ``force``."""
    if force or not path.is_file():
        return
    try:
        existing = load_calibration(path)
    except SpecInvalid as error:
        raise FieldInvalid("force", "{message}: pass {force} to replace the file", message=error) from None
    entry = existing.gpus.get(gpu)
    if entry is not None:
        raise FieldInvalid("force", "{path} holds a calibration of {gpu} (measured {when}): pass {force} to "
                           "replace it", path=path, gpu=gpu, when=entry.measured_at)


def save_calibration(path: Path, entry: GpuCalibration, *, force: bool = False) -> None:
    """Write ``entry`` into the file at ``path``, keeping the entries of other cards already there (``force``: a
    file that is no calibration file is replaced, not merged). The file is written to a temporary name beside it
    and renamed over it when complete, so a full disk or a killed run never loses the cards already in it."""
    try:
        existing = load_calibration(path) if path.is_file() else CalibrationFile()
    except SpecInvalid:
        if not force:
            raise
        existing = CalibrationFile()
    gpus = {**existing.gpus, entry.gpu: entry}
    data = CalibrationFile(gpus=gpus).model_dump(mode="json")
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "# Written by `estimator calibrate`; read by `estimate` (see estimator/live/calibration.py).\n"
    import tempfile

    import yaml

    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(header + yaml.safe_dump(data, sort_keys=False))
        os.chmod(temporary, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def user_calibration_path() -> Path:
    """``<user config dir>/estimator/calibration.yaml`` (platformdirs; $XDG_CONFIG_HOME on Linux)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("estimator")) / FILE_NAME


def entry_for(file: CalibrationFile, gpu: GpuSpec) -> GpuCalibration | None:
    """The entry measured on this catalog card (matched through the catalog name recorded at calibration)."""
    for entry in file.gpus.values():
        if entry.catalog_gpu == gpu.name:
            return entry
    return None


def apply_calibration(profile: EfficiencyProfile, entry: GpuCalibration, source: str) -> EfficiencyProfile:
    """``profile`` with the card's measured values in place of its defaults; the description says so."""
    update: dict[str, Any] = {k: v for k, v in entry.profile_overrides.items() if k in OVERRIDABLE}
    update.update(host_update(profile, update.pop("host_per_op_s", None)))
    update.update(matmul_update(profile, update.pop("matmul_flop_efficiency", None)))
    for key in ("cuda_context_bytes", "workspace_bytes"):
        if key in update:
            update[key] = int(update[key])
    update["description"] = f"{profile.description}; calibrated on {entry.gpu} ({source}, {entry.measured_at})"
    update["fitted_on"] = (*profile.fitted_on, f"calibration {source}")
    try:
        return EfficiencyProfile.model_validate({**profile.model_dump(), **update})
    except ValidationError as error:
        from estimator.catalog.registry import validation_message

        raise SpecInvalid(f"{source}: calibrated profile is invalid: {validation_message(error)}") from None


def matmul_update(profile: EfficiencyProfile, measured: float | None) -> dict[str, float]:
    """The matmul fraction of ``profile`` on a card whose large-GEMM probe read ``measured``: the profile's own
    × measured ÷ `matmul_reference_efficiency` (the probe's reading where the profile was fitted) when the profile
    states it, else the reading itself; nothing without a measurement."""
    if not measured:
        return {}
    reference = profile.matmul_reference_efficiency
    scaled = measured if reference is None else profile.matmul_flop_efficiency * measured / reference
    return {"matmul_flop_efficiency": min(1.0, scaled)}


def host_update(profile: EfficiencyProfile, measured: float | None) -> dict[str, float | None]:
    """The host figures of ``profile`` at a measured cost per operation: ``host_per_op_s`` replaced and every
    `HOST_SCALED` figure × measured ÷ the profile's own, and the host states it was measured beside dropped (they
    describe another host: `timing.host_state_range`); nothing for a profile without a host floor counted in
    operations (a CUDA-graph or serving profile), or without a measurement."""
    if not measured or not profile.host_per_op_s:
        return {}
    ratio = measured / profile.host_per_op_s
    return {"host_per_op_s": measured, "host_bare_op_range_s": None,
            **{key: getattr(profile, key) * ratio for key in HOST_SCALED}}


def calibrated_profile(profile: EfficiencyProfile, gpu: GpuSpec, path: Path | None) -> EfficiencyProfile:
    """The profile `estimate` uses: with ``path``, that file's entry for ``gpu`` (it must have one); without, the
    user's calibration file when it exists and has an entry for ``gpu``; otherwise ``profile`` unchanged.
    ``ESTIMATOR_NO_CALIBRATION=1`` turns the automatic pick-up off."""
    if path is not None:
        entry = entry_for(load_calibration(path), gpu)
        if entry is None:
            raise FieldInvalid("calibration", "{path} has no calibration for {name}; run `estimator calibrate` on "
                               "one, or leave out {calibration}", path=path, name=gpu.name)
        return apply_calibration(profile, entry, str(path))
    if os.environ.get("ESTIMATOR_NO_CALIBRATION"):
        return profile
    user = user_calibration_path()
    if not user.is_file():
        return profile
    try:
        entry = entry_for(load_calibration(user), gpu)
        return profile if entry is None else apply_calibration(profile, entry, str(user))
    except SpecInvalid as error:
        # A file nobody named on this command line must not break every estimate on every card: say so, once, and
        # estimate with the shipped profile (an explicit --calibration with the same file is refused instead). An
        # entry the file's schema takes but the profile does not (a bandwidth fraction of 7) is ignored the same way.
        sys.stderr.write(f"warning: ignoring the calibration file: {error}\n")
        return profile
