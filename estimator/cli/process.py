"""What the console scripts set for their own process while a command runs (never when the package is imported):
pydantic's plugin search off, and SIGTERM and SIGHUP ended like Ctrl-C (`signals_end_like_interrupts`).

pydantic looks for plugins the first time it builds a validator: it reads the entry points of every installed
distribution (`importlib.metadata`), about 4 % of a cold `estimate --format json` on the development container
(docs/performance.md). The estimator uses no pydantic plugin, so the scripts switch the search off with pydantic's
own documented setting, ``PYDANTIC_DISABLE_PLUGINS`` (https://docs.pydantic.dev/latest/api/plugin/; releases
before 2.7 ignore it and search as before), unless the environment already sets it: a user who wants a plugin sets
``PYDANTIC_DISABLE_PLUGINS=`` (empty: no plugin disabled) or names only the plugins to leave out. The setting is
removed again when the command ends, so a caller in the same process (a test calling the entry point) keeps its
environment.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

PLUGINS_SETTING = "PYDANTIC_DISABLE_PLUGINS"
NO_PLUGINS = "__all__"  # pydantic's value for "disable every plugin" ("1" and "true" mean the same)


@contextmanager
def without_pydantic_plugins() -> Iterator[None]:
    """The body run with pydantic's plugin search off, unless the environment says otherwise (see the module)."""
    added = PLUGINS_SETTING not in os.environ
    if added:
        os.environ[PLUGINS_SETTING] = NO_PLUGINS
    try:
        yield
    finally:
        if added:
            os.environ.pop(PLUGINS_SETTING, None)


# SIGHUP is POSIX only; where it is missing (Windows) only SIGTERM is caught.
ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(BaseException):
    """A SIGTERM or SIGHUP, raised where the program is when it comes, so every ``finally`` block runs as it does
    on Ctrl-C (an ``-o`` file's temporary is removed) and the process ends with status 128 + the signal's number,
    the shell's convention. A BaseException, as KeyboardInterrupt is, so no ``except Exception`` swallows it, and
    not a KeyboardInterrupt, which click turns into its Abort (status 130)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


_RECEIVED: list[int] = []  # the signals received while `signals_end_like_interrupts` holds, first first


def _raise_terminated(signum: int, frame: object) -> None:
    _RECEIVED.append(signum)
    raise Terminated(signum)


@contextmanager
def signals_end_like_interrupts() -> Iterator[None]:
    """The body run with SIGTERM and SIGHUP raising `Terminated` (see it), the earlier handlers restored after.
    A Terminated that reaches here (one that came before `run.guarded` took over, or after), or one that was
    dropped on its way (raised inside a finaliser, which Python reports and ignores), ends the process with its
    status and one line; from a thread other than the main one (where Python allows no handler) nothing is
    changed."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _RECEIVED.clear()
    earlier = {number: signal.signal(number, _raise_terminated) for number in ENDING_SIGNALS}
    try:
        yield
    except Terminated as ended:
        say(f"error: terminated by {ended}\n")
        raise SystemExit(ended.exit_code) from None
    finally:
        for number, handler in earlier.items():
            signal.signal(number, handler)
    if _RECEIVED:  # raised where Python reports and drops an exception (a finaliser, a callback): still the end
        dropped = Terminated(_RECEIVED[0])
        say(f"error: terminated by {dropped}\n")
        raise SystemExit(dropped.exit_code)


def say(line: str) -> None:
    """``line`` on stderr, unless stderr is gone (a hung-up terminal): the exit status says it then."""
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Aborted(Exception):
    """What typer's Abort is where typer is not imported (the `estimate` console script's fast path): the input
    ended where a command read it."""


class _Pacified:
    """sys.stdout or sys.stderr after a closed pipe, as typer leaves them: a flush swallows the broken pipe (the
    interpreter flushes both at exit)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError as error:
            if error.errno != errno.EPIPE:
                raise

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.wrapped, attr)


def as_typer_invokes(call: Callable[[], Any]) -> Any:
    """``call()`` as typer's main runs a command (not standalone), so a script that parses its own line ends as
    the typer command does: input that ends, a blank line and Abort; Ctrl-C, status 130 without a word; a closed
    pipe, status 1 without a word (tests/cli/test_estimate_fast.py compares the two)."""
    try:
        return call()
    except EOFError as error:
        sys.stderr.write("\n")
        sys.stderr.flush()
        raise Aborted from error
    except KeyboardInterrupt:
        return 130
    except OSError as error:
        if error.errno != errno.EPIPE:
            raise
        sys.stdout, sys.stderr = _Pacified(sys.stdout), _Pacified(sys.stderr)
        sys.exit(1)
