"""What the console scripts set for their own process while a command runs (never when the package is imported).

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
    from estimator.cli.run import Aborted

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
