"""Running a command: every error becomes one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from pydantic import ValidationError

from estimator.catalog.registry import validation_message
from estimator.cli.process import Aborted, Terminated, say
from estimator.errors import ECHO_MAX, EstimatorError, FieldInvalid, echoed
from estimator.request.options import flag_of

# What a usage error repeats of the command line: a quoted value, or a word (an unknown option), over the echo limit
_LONG_QUOTED = re.compile("'([^']{" + str(ECHO_MAX + 1) + ",})'")
_LONG_WORD = re.compile(r"(?<!\S)[^\s']{" + str(ECHO_MAX + 1) + ",}")


def _cut_echoes(message: str) -> str:
    """``message`` (click's wording of a usage error) with each value it repeats cut to the echo limit."""
    message = _LONG_QUOTED.sub(lambda m: "'" + echoed(m.group(1)) + "'", message)
    return _LONG_WORD.sub(lambda m: echoed(m.group(0)), message)


def _one_line(message: str) -> str:
    """``message`` with every character that is not printable (a line or page break, a NUL, a text-direction
    override) written as its escape, so what a message repeats of a file or a command line can neither break
    the line nor hide: a damaged pickle named a module ``io.op\\x0cn``, whose form feed split the error in two."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in message)


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"error: {_one_line(message)}\n")
    raise SystemExit(code)


_TYPER_ABORT = "typer.exceptions.Abort"


def _aborted(error: Exception) -> bool:
    """Whether ``error`` is typer's Abort (a prompt refused, input ended) or `Aborted`. Asked of the error's own
    classes, by name: typer is not imported to ask (the `estimate` script never loads it), nor looked up among the
    loaded modules."""
    return isinstance(error, Aborted) or any(f"{c.__module__}.{c.__qualname__}" == _TYPER_ABORT
                                             for c in type(error).__mro__)


def run(command: Any, args: list[str] | None = None) -> None:
    """Run a (typer) click command with every error reduced to one line on stderr and a non-zero exit."""
    guarded(lambda: command.main(args=args, standalone_mode=False))


def guarded(call: Callable[[], Any]) -> None:
    """``call()`` with every error reduced to one line on stderr and a non-zero exit (a non-zero int it returns
    is the exit status)."""
    try:
        code = call()
    except FieldInvalid as error:  # the library names the field; the command line, its flag
        _fail(error.worded(flag_of), error.exit_code)
    except EstimatorError as error:
        _fail(str(error), error.exit_code)
    except ValidationError as error:
        _fail(validation_message(error), 2)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Terminated as ended:  # SIGTERM or SIGHUP (`process.signals_end_like_interrupts`): cleaned up as Ctrl-C
        say(f"error: terminated by {ended}\n")  # stderr may be gone with the terminal (SIGHUP)
        raise SystemExit(ended.exit_code) from None
    except (OverflowError, ZeroDivisionError) as error:  # numbers beyond what the formulas can carry
        _fail(f"numbers out of range: {error}", 2)
    except OSError as error:  # the user's files and folders: a missing folder, a directory, a full or read-only disk
        where = f": {error.filename}" if error.filename else ""
        _fail(f"{error.strerror or error}{where}", 2)
    except Exception as error:
        if _aborted(error):
            _fail("aborted", 130)
        # Usage errors (missing or unknown option, bad choice) are click exceptions; typer vendors click, so they
        # are recognised by their interface rather than their class.
        if hasattr(error, "format_message") and hasattr(error, "exit_code"):
            flags = getattr(getattr(error, "param", None), "opts", None)
            if isinstance(error.__cause__, ValidationError) and flags:  # typer converted a typed option: said in
                _fail(_cut_echoes(f"{max(flags, key=len)} {validation_message(error.__cause__)}"), 2)  # its words
            worded = " ".join(str(error.format_message()).split()).replace("Value error, ", "")
            _fail(_cut_echoes(worded), int(error.exit_code) or 2)
        raise
    if isinstance(code, int) and code:
        raise SystemExit(code)
