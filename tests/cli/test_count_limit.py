"""Every count option of every command meets one limit with one message, whatever its suffix: a count of
thousands of digits (past Python's 4,300-digit int conversion) is one line naming the flag, exit 2, nothing on
stdout (`estimator.units.parse_count`, called once, by `estimator.request.convert.count`)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from estimator.request.convert import count
from estimator.request.errors import FieldInvalid
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
HUGE = "1" * 4400
MODEL = ("--model", "llama-3.2-1b")
TRAIN = ("estimate", *MODEL, "--gpu", "h100", "--mode", "train")
CASES = [  # (command words before the count, its flag): every count option of estimate, plan, sweep and validate
    *[(("estimate", *MODEL, "--gpu", "h100"), flag) for flag in (
        "--batch", "--prompt-tokens", "--output-tokens", "--gpus", "--nodes", "--gpus-per-node", "--ep")],
    *[(TRAIN, flag) for flag in ("--seq-len", "--grad-accum", "--dp", "--tp", "--pp", "--cp", "--virtual-stages",
                                 "--lora-rank")],
    *[(("plan", *MODEL, "--concurrency", "8"), flag) for flag in (
        "--prompt-tokens", "--output-tokens", "--step-tokens", "--max-nodes")],
    (("plan", *MODEL), "--concurrency"),
    *[(("sweep", *MODEL, "--gpu", "h100"), flag) for flag in (
        "--batch", "--prompt-tokens", "--output-tokens", "--gpus", "--max-points")],
    *[(("validate", *MODEL), flag) for flag in ("--batch", "--prompt-tokens")],  # refused before any GPU is sought
]


@pytest.mark.parametrize("suffix", ["ki", "k", ""])
@pytest.mark.parametrize(("words", "flag"), CASES, ids=[f"{w[0]}{f}" for w, f in CASES])
def test_a_count_of_thousands_of_digits_is_one_line_in_every_command(cli: Cli, words: tuple[str, ...], flag: str,
                                                                     suffix: str) -> None:
    result = cli(*words, flag, HUGE + suffix)
    assert result.exit_code == 2 and result.stdout == "", result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag}: not a count: '1111"), result.stderr
    assert lines[0].endswith("(a count is at most 1e18)") and len(lines[0]) < 160


@pytest.mark.parametrize("suffix", ["ki", ""])
def test_the_estimate_script_refuses_a_count_of_thousands_of_digits_in_one_line(cli: Cli, suffix: str) -> None:
    result = cli(*MODEL, "--gpu", "h100", "--batch", HUGE + suffix, entry="estimate")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip() == "error: --batch: not a count: '" + "1" * 77 + "…' (a count is at most 1e18)"


def test_a_count_given_as_a_number_meets_the_same_limit() -> None:
    assert count("batch", 10**18) == 10**18
    for value in (10**18 + 1, 10**4400):  # the Python API's numbers: one past the limit, and one past str()'s
        with pytest.raises(FieldInvalid, match=r"^batch: not a count: .* \(a count is at most 1e18\)$"):
            count("batch", value)
