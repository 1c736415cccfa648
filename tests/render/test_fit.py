"""Tables that fit the terminal (estimator.render.fit): whole when they fit, else text broken between words, else
the columns over several tables with the row's name repeated; never a cell cut with an ellipsis."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from estimator.render.fit import Column, print_table


def _console(width: int) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=width, color_system=None, force_terminal=False), buffer


COLUMNS = [Column("name", wrap=True), *(Column(f"figure {i}", "right") for i in range(8))]
ROWS = [["NVIDIA GeForce RTX 4090 24GB", *(f"{1_000_000 * (i + 1):,} B" for i in range(8))],
        ["NVIDIA L4 24GB", *(f"{i:,}.5 ms" for i in range(8))]]


def test_a_table_that_fits_prints_as_rich_prints_it() -> None:
    console, buffer = _console(200)
    print_table(console, COLUMNS, ROWS, title="t", title_justify="left")
    plain, expected = _console(200)
    table = Table(title="t", title_justify="left")
    for c in COLUMNS:
        table.add_column(c.header, justify=c.justify)
    for row in ROWS:
        table.add_row(*row)
    plain.print(table)
    assert buffer.getvalue() == expected.getvalue()


def test_too_wide_a_table_splits_its_columns_and_repeats_the_name() -> None:
    console, buffer = _console(80)
    print_table(console, COLUMNS, ROWS, caption="a caption")
    text = buffer.getvalue()
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert "…" not in text
    tables = text.count("┏")
    # natural widths: name 28, figures 12 ("8,000,000 B") or 8-10; 1 + 9 columns × (width + 3) > 80 → split
    assert tables >= 2
    assert text.count("┃ name") == tables  # the key column heads every table
    for row in ROWS:
        for cell in row[1:]:
            assert cell in text  # every figure whole, on one line
    assert lines[-1] == "a caption"  # after the last table, as text


def test_text_breaks_between_words_before_columns_split() -> None:
    console, buffer = _console(40)
    print_table(console, [Column("name", wrap=True), Column("GB", "right")],
                [["NVIDIA GeForce RTX 4090 24GB with a long name", "24.0 GB"]])
    text = buffer.getvalue()
    assert text.count("┏") == 1  # one table: the name wraps
    assert "24.0 GB" in text
    names = [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    assert len(names) > 1 and " ".join(names) == "NVIDIA GeForce RTX 4090 24GB with a long name"  # whole words
    assert all(len(line) <= 40 for line in text.splitlines())
