"""An option typer converts itself (a whole number, a number) is refused in the tool's words, at its flag: the
conversion's pydantic wording (``Input should be a valid integer, unable to parse string as an integer``) is not
shown to a user."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import CliResult


@pytest.mark.parametrize(("args", "line"), [
    (("monitor", "--count", "x"), "error: --count must be a whole number, got 'x'"),
    (("monitor", "--interval", "fast"), "error: --interval must be a number, got 'fast'"),
    (("monitor", "--count", ""), "error: --count is empty"),
])
def test_a_typed_option_is_refused_in_the_tool_s_words(cli: Callable[..., CliResult], args: tuple[str, ...],
                                                      line: str) -> None:
    done = cli(*args)
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr == line + "\n"
