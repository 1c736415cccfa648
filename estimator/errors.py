"""Errors the estimator raises for bad input.

Every user error is an `EstimatorError`; the CLI turns one into a single line on stderr and a non-zero exit.
Each subclass also derives from the builtin that describes it, so library callers can catch either.
"""

from __future__ import annotations

from collections.abc import Sequence


class EstimatorError(Exception):
    """Base of every error caused by input (names, files, numbers, layouts)."""

    exit_code = 2


class SpecNotFound(EstimatorError, LookupError):
    """A GPU, model, format or profile name that is not in the catalog."""

    def __init__(self, kind: str, name: str, suggestions: Sequence[str] = (), hint: str = "") -> None:
        self.kind = kind
        self.name = name
        self.suggestions = tuple(suggestions)
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        message = f"unknown {self.kind} {self.name!r}"
        if self.suggestions:
            message += "; did you mean " + ", ".join(repr(s) for s in self.suggestions) + "?"
        if not self.hint:
            return message
        return f"{message} Otherwise {self.hint}" if self.suggestions else f"{message}; {self.hint}"


class SpecInvalid(EstimatorError, ValueError):
    """A spec file, config.json or calibration file that cannot be read or fails validation."""


class WorkloadInvalid(EstimatorError, ValueError):
    """A workload that cannot run: non-positive sizes, impossible parallel layouts, unknown options."""


class MissingDependency(EstimatorError, ImportError):
    """An optional feature whose package is not installed; the message names what to install."""

    exit_code = 3


class DeviceUnavailable(EstimatorError, RuntimeError):
    """No usable GPU, driver or NVML library where a live-device command needs one."""

    exit_code = 3
