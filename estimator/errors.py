"""Errors the estimator raises for bad input.

Every user error is an `EstimatorError`; the CLI turns one into a single line on stderr and a non-zero exit.
Each subclass also derives from the builtin that describes it, so library callers can catch either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence


class EstimatorError(Exception):
    """Base of every error caused by input (names, files, numbers, layouts)."""

    exit_code = 2


ECHO_MAX = 80  # the most of a user's input a one-line error repeats


def echoed(text: str) -> str:
    """``text`` as a one-line error repeats it: at most ``ECHO_MAX`` characters, an ellipsis where it was cut."""
    return text if len(text) <= ECHO_MAX else text[:ECHO_MAX - 1] + "…"


class SpecNotFound(EstimatorError, LookupError):
    """A GPU, model, format or profile name that is not in the catalog."""

    def __init__(self, kind: str, name: str, suggestions: Sequence[str] = (), hint: str = "") -> None:
        self.kind = kind
        self.name = name
        self.suggestions = tuple(suggestions)
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        message = f"unknown {self.kind} {echoed(self.name)!r}"
        if self.suggestions:
            message += "; did you mean " + ", ".join(repr(s) for s in self.suggestions) + "?"
        if not self.hint:
            return message
        return f"{message} Otherwise {self.hint}" if self.suggestions else f"{message}; {self.hint}"


class SpecInvalid(EstimatorError, ValueError):
    """A spec file, config.json or calibration file that cannot be read or fails validation."""


class WorkloadInvalid(EstimatorError, ValueError):
    """A workload that cannot run: non-positive sizes, impossible parallel layouts, unknown options."""


_FIELD = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


class FieldInvalid(WorkloadInvalid):
    """``field``'s value cannot be used, said in the library's terms: ``template`` names fields in braces
    (``{batch} must be positive, got {value}``); ``values`` fill the other braces, already worded (quoted where a
    user's text is shown). ``str()`` names each field by its name (``ep 4 does not divide ...``); a front end words
    it its own way (`worded`: the CLI passes each field's flag, ``--ep 4 does not divide ...``)."""

    def __init__(self, field: str, template: str, **values: object) -> None:
        self.field = field
        self.template = template
        self.values = {key: str(value) for key, value in values.items()}
        super().__init__(self.worded(lambda name: name))

    def worded(self, name_of: Callable[[str], str]) -> str:
        """The message with every field named by ``name_of`` (the CLI passes the field's flag)."""
        return _FIELD.sub(lambda m: self.values[m.group(1)] if m.group(1) in self.values else name_of(m.group(1)),
                          self.template)

    def __str__(self) -> str:
        return self.worded(lambda name: name)

    @classmethod
    def joined(cls, problems: Sequence[FieldInvalid], separator: str = "; ") -> FieldInvalid:
        """Several refusals as one, their messages joined by ``separator``: located at the first one's field
        (each one's values kept apart, so two that fill the same brace do not collide)."""
        templates, values = [], {}
        for index, problem in enumerate(problems):
            def own(match: re.Match[str], index: int = index, problem: FieldInvalid = problem) -> str:
                name = match.group(1)
                return "{" + f"v{index}_{name}" + "}" if name in problem.values else match.group(0)

            templates.append(_FIELD.sub(own, problem.template))
            values.update({f"v{index}_{key}": value for key, value in problem.values.items()})
        return cls(problems[0].field, separator.join(templates), **values)


class MissingDependency(EstimatorError, ImportError):
    """An optional feature whose package is not installed; the message names what to install."""

    exit_code = 3


class DeviceUnavailable(EstimatorError, RuntimeError):
    """No usable GPU, driver or NVML library where a live-device command needs one."""

    exit_code = 3
