"""The console scripts' process settings: pydantic's plugin search off while a command runs, the user's setting kept."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from estimator.cli.process import NO_PLUGINS, PLUGINS_SETTING, without_pydantic_plugins


def test_the_setting_holds_while_the_command_runs_and_is_removed_after(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PLUGINS_SETTING, raising=False)
    with without_pydantic_plugins():
        assert os.environ[PLUGINS_SETTING] == NO_PLUGINS
    assert PLUGINS_SETTING not in os.environ


def test_a_failing_command_removes_it_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PLUGINS_SETTING, raising=False)
    with pytest.raises(SystemExit), without_pydantic_plugins():
        sys.exit(2)
    assert PLUGINS_SETTING not in os.environ


@pytest.mark.parametrize("users", ["", "some-plugin", "false"])
def test_the_users_own_setting_wins(users: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PLUGINS_SETTING, users)
    with without_pydantic_plugins():
        assert os.environ[PLUGINS_SETTING] == users
    assert os.environ[PLUGINS_SETTING] == users


# Runs the console script's entry point in a new process with importlib.metadata's entry_points counted: pydantic's
# plugin search is the only caller on this path, so a count of 0 means it did not search.
_COUNTED = """
import importlib.metadata, sys
calls = []
real = importlib.metadata.entry_points
importlib.metadata.entry_points = lambda *a, **k: calls.append(k) or real(*a, **k)
from estimator.cli.estimate import estimate_main
sys.argv = ['estimate', '--model', 'llama-3.2-1b', '--gpu', 'h100', '--format', 'json']
estimate_main()
sys.stderr.write(f'searches={len(calls)}')
"""


@pytest.mark.parametrize(("users", "searching"), [(None, False), ("", True)])
def test_the_estimate_script_does_not_search_for_plugins(users: str | None, searching: bool) -> None:
    env = {key: value for key, value in os.environ.items() if key != PLUGINS_SETTING}
    if users is not None:
        env[PLUGINS_SETTING] = users  # empty: the user asks for every plugin, so pydantic searches
    done = subprocess.run([sys.executable, "-c", _COUNTED], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.startswith("{")
    assert done.stderr.startswith("searches="), done.stderr
    assert (int(done.stderr.removeprefix("searches=")) > 0) is searching, done.stderr
