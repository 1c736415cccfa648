"""`validate --model` reads a name that is no path as estimate does: `~nosuchuser/x` (a home folder that does not
exist: pathlib raises RuntimeError) or a name too long for a path is an unknown model, one line and exit 2, not a
traceback (the fuzz campaign's class 'a model name probed as a path')."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import CliResult


@pytest.mark.parametrize("name", ["~nosuchuser/x", "a" * 5000, "llama\x00"])
def test_validate_reads_a_name_that_is_no_path_as_an_unknown_model(cli: Callable[..., CliResult], name: str) -> None:
    done = cli("validate", "--model", name)
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: unknown model '")
