"""Tables that fit the terminal: columns declare a minimum width and a priority; what does not fit is dropped.

At 80 columns a table keeps its most useful columns readable (wrapping long text inside them) and
drops low-value ones, naming them under the table so nobody wonders where they went; ``--output
json`` always has every field at full length. Cell text is shown as data (cleaned, never markup).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent.render.safe import clean_line

__all__ = ["Column", "fit_columns", "allot_widths", "print_table"]

_BORDER = 3
"""Columns of padding and rule per table column (box.SIMPLE_HEAD: one space each side, one rule)."""


@dataclass(frozen=True)
class Column:
    """One column: header, the width below which it is unreadable, and how much it matters (higher stays)."""

    header: str
    min_width: int = 6
    priority: int = 1
    justify: str = "left"
    max_width: int | None = None
    """Cap for a column whose values are long (full values are in --output json)."""
    wrap: bool = True
    """Fold long values over several lines; False cuts them with an ellipsis."""


def fit_columns(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> list[int]:
    """Indexes of the columns to show at ``width``, in their original order.

    Each column needs ``max(header, min_width)`` columns (or its longest value, when shorter);
    the lowest-priority columns (the rightmost first, among equals) are dropped until the rest fit.
    """
    def need(i: int) -> int:
        longest = max((len(r[i]) for r in rows), default=0)
        return max(len(columns[i].header), min(columns[i].min_width, longest or columns[i].min_width))

    keep = list(range(len(columns)))
    while len(keep) > 1 and sum(need(i) + _BORDER for i in keep) > width:
        drop = min(keep, key=lambda i: (columns[i].priority, -i))
        keep.remove(drop)
    return keep


def allot_widths(columns: Sequence[Column], rows: Sequence[Sequence[str]], keep: list[int], width: int) -> dict[int, int]:
    """Width of each kept column: its natural width (longest value, capped by max_width), then the
    lowest-priority columns shrunk towards their minimum until the table fits ``width``."""
    natural = {}
    for i in keep:
        longest = max([len(columns[i].header)] + [len(r[i]) for r in rows])
        natural[i] = min(longest, columns[i].max_width or longest)
    widths = dict(natural)
    excess = sum(widths.values()) + _BORDER * len(keep) - width
    for i in sorted(keep, key=lambda i: (columns[i].priority, -i)):
        if excess <= 0:
            break
        floor = max(len(columns[i].header), min(columns[i].min_width, natural[i]))
        cut = min(excess, widths[i] - floor)
        widths[i] -= cut
        excess -= cut
    return widths


def print_table(console: Console, title: str | None, columns: Sequence[Column], rows: Sequence[Sequence[str]], *,
                styles: Sequence[str | None] | None = None, note: str | None = None) -> None:
    """Print the rows under the columns that fit ``console.width`` (see :func:`fit_columns`).

    Args:
        styles: an optional rich style per row (e.g. red for a failed case).
        note: a line printed under the table (e.g. where the full values are).
    """
    cells = [[clean_line(str(c)) for c in r] for r in rows]
    keep = fit_columns(columns, cells, console.width)
    widths = allot_widths(columns, cells, keep, console.width)
    if title:
        console.print(Text(clean_line(title), style="bold"), soft_wrap=False)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, expand=False, show_edge=False)
    for i in keep:
        col = columns[i]
        table.add_column(col.header, justify=col.justify, width=widths[i],  # type: ignore[arg-type]
                         overflow="fold" if col.wrap else "ellipsis", no_wrap=not col.wrap)
    for n, row in enumerate(cells):
        table.add_row(*(Text(row[i]) for i in keep), style=(styles[n] if styles else None))
    console.print(table)
    dropped = [columns[i].header for i in range(len(columns)) if i not in keep]
    tail = [f"not shown at {console.width} columns: {', '.join(dropped)}"] if dropped else []
    if note:
        tail.append(note)
    if tail:
        console.print(Text("; ".join(tail) + ".", style="dim"), soft_wrap=False)
