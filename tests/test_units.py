from __future__ import annotations

import doctest
import time
from collections.abc import Callable

import pytest

from estimator import units
from estimator.errors import WorkloadInvalid
from estimator.units import format_bytes, format_seconds, parse_bytes, parse_count, parse_tokens


def test_doctests() -> None:
    assert doctest.testmod(units).failed == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("70b", 70_000_000_000),
        ("13B", 13_000_000_000),
        ("7.5e9", 7_500_000_000),
        ("2048", 2048),
        ("8k", 8000),
        ("32Ki", 32768),
        ("1.5m", 1_500_000),
        (" 405B ", 405_000_000_000),
    ],
)
def test_parse_count(text: str, expected: int) -> None:
    assert parse_count(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1.5", "nan", "inf", "1e400", "-", "12q", "1.2.3"])
def test_parse_count_rejects(text: str) -> None:
    with pytest.raises(WorkloadInvalid, match=r"count|whole|finite"):
        parse_count(text)


def test_decimal_and_binary_are_labelled() -> None:
    assert format_bytes(10**9, binary=False) == "1.0 GB"
    assert format_bytes(2**30, binary=True) == "1.0 GiB"
    assert format_bytes(2**30, binary=False) == "1.1 GB"
    assert format_bytes(512, binary=False) == "512 B"


def test_format_seconds_picks_unit() -> None:
    assert format_seconds(0.0687) == "68.7 ms"
    assert format_seconds(2.5e-5) == "25.0 µs"
    assert format_seconds(3.0) == "3.00 s"


@pytest.mark.parametrize(("text", "expected"), [
    ("96GiB", 103_079_215_104),  # 96 × 2³⁰
    ("100 GB", 100_000_000_000),  # 100 × 10⁹
    ("512MiB", 536_870_912),  # 512 × 2²⁰
    ("1.5TB", 1_500_000_000_000),
    ("4096B", 4096),
])
def test_parse_bytes_needs_and_honours_the_unit(text: str, expected: int) -> None:
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["96", "GB", "0GiB", "-1GB", "96 iB", "1e400GB", "nanGB"])
def test_parse_bytes_refuses_what_is_not_a_size(text: str) -> None:
    with pytest.raises(WorkloadInvalid):
        parse_bytes(text)


@pytest.mark.parametrize("suffix", ["", "k", "m", "b", "t", "ki", "Ki", " ki"])
def test_a_count_of_thousands_of_digits_is_one_message_whatever_the_suffix(suffix: str) -> None:
    text = "1" * 4400 + suffix  # past Python's 4,300-digit limit of int(str)
    with pytest.raises(WorkloadInvalid) as refused:
        parse_count(text)
    message = str(refused.value)
    assert message.startswith("not a count: '1111") and message.endswith("(a count is at most 1e18)")
    assert len(message) < 120  # the input cut, not echoed whole


@pytest.mark.parametrize("text", ["1e19", "1e400", "2e18", "976562500000001ki", "0" * 5000 + "1" * 20 + "ki"])
def test_a_count_past_the_limit_is_refused_with_the_limit(text: str) -> None:
    with pytest.raises(WorkloadInvalid, match=r"\(a count is at most 1e18\)$"):
        parse_count(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("1e18", 10**18), ("1000000000000000000", 10**18), ("976562500000000ki", 10**18),
    ("0" * 5000 + "1ki", 1024),  # leading zeros are no digits of the value
])
def test_a_count_at_the_limit_is_accepted_exactly(text: str, expected: int) -> None:
    assert parse_count(text) == expected


@pytest.mark.parametrize("parse", [parse_count, parse_bytes])
@pytest.mark.parametrize("text", ["1" * 20_000 + "q", "1" * 20_000 + " " * 20_000 + "kx", "1" * 20_000 + ".5x"])
def test_a_long_text_that_is_no_number_is_refused_at_once(parse: Callable[[str], int], text: str) -> None:
    """A pattern that retries every split of a run of digits took 24 s of CPU on 20,000 of them (quadratic); the
    parsers give up in linear time: milliseconds, under a bound of one CPU second that a busy machine leaves."""
    start = time.process_time()
    with pytest.raises(WorkloadInvalid, match=r"^not a (count|size): '1111"):
        parse(text)
    assert time.process_time() - start < 1.0


@pytest.mark.parametrize(("text", "tokens"), [
    ("2k", 2_000), ("2K", 2_048), ("2Ki", 2_048), ("1M", 1_048_576), ("1m", 1_000_000), ("1G", 2**30),
    ("25.6k", 25_600), ("2048", 2_048), ("1e4", 10_000), (" 8K ", 8_192),
])
def test_token_counts_read_k_and_K_as_vllm_does(text: str, tokens: int) -> None:
    """vLLM's human_readable_int (vllm/engine/arg_utils.py): '1k' -> 1,000, '1K' -> 1,024, '25.6k' -> 25,600."""
    assert parse_tokens(text) == tokens


def test_a_binary_token_suffix_takes_a_whole_number() -> None:
    with pytest.raises(WorkloadInvalid, match=r"binary suffix K takes a whole number; 2.5k is decimal"):
        parse_tokens("2.5K")


def test_model_sizes_keep_decimal_suffixes() -> None:
    """Only token counts read K as 1,024: a size such as 70B or 8K params stays decimal."""
    assert parse_count("8K") == 8_000 and parse_count("70B") == 70_000_000_000
