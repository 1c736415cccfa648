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

import os
from collections.abc import Iterator
from contextlib import contextmanager

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
