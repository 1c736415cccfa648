"""An error is one line whatever it repeats: a character that is not printable (a form feed, a NUL, a
text-direction override) in a file or on the command line is written as its escape. The long fuzz run found a
damaged pickle naming a module ``io.op<form feed>n``, whose refusal `oom` printed as two lines."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult


def test_a_pickle_naming_a_module_with_a_form_feed_is_refused_in_one_line(cli: Callable[..., CliResult],
                                                                          tmp_path: Path) -> None:
    snapshot = tmp_path / "damaged.pickle"
    snapshot.write_bytes(b"\x80\x04\x8c\x02io\x8c\x04op\x0cn\x93.")  # STACK_GLOBAL of io.op<form feed>n
    done = cli("oom", "--from", str(snapshot))
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr == ("error: refused: the snapshot names io.op\\x0cn; only plain containers and numbers are "
                           "read from a snapshot (nothing was executed)\n")


def test_a_model_name_with_control_characters_is_echoed_escaped(cli: Callable[..., CliResult]) -> None:
    done = cli("estimate", "--model", "llama\x0c\u202ex\x00", "--gpu", "h100")
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "'llama\\x0c\\u202ex\\x00'" in done.stderr
