"""Keeping every read tool's result small at any cluster size: a size budget, top-k counts, a ``more`` cursor.

A model reads tool results as tokens. Whatever the cluster (100 nodes or 10,000), one result stays
under ``MAX_RESULT_CHARS`` characters of JSON, which is below 4,000 tokens for any of the
tokenizers Warden's models use (JSON of ids, numbers and short names runs at 2.6-4 characters per
token; bench/scale.py measures it with o200k_base). A list is cut where the budget ends, and the
result says where to go on: ``next`` is a cursor to pass back as the tool's ``more`` argument.
Dictionaries of counts keep their ``COUNTS_TOP`` largest entries and sum the rest under ``"other"``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["MAX_RESULT_CHARS", "ITEMS_CHARS", "COUNTS_TOP", "page", "top_counts", "cursor_offset"]

MAX_RESULT_CHARS = 10_000
"""Characters of JSON one tool result may hold (about 2,500-3,800 tokens)."""
ITEMS_CHARS = 8_000
"""Of which the listed items may take this much; the rest is left for counts and totals."""
COUNTS_TOP = 20
"""Entries kept in a dictionary of counts (the largest); the others are summed as ``other``."""

T = TypeVar("T", bound=BaseModel)


def cursor_offset(more: str | None) -> int:
    """The offset a ``more`` cursor (``"@40"``, as a result's ``next`` gives it) stands for; 0 for None.

    Raises:
        ValueError: a cursor that no result gave (the tool reports it to the model as an error).
    """
    if more is None or more == "":
        return 0
    text = more.strip()
    if not (text.startswith("@") and text[1:].isdigit()):
        raise ValueError(f"more={more!r} is not a cursor; pass back a result's 'next' value (like '@20')")
    return int(text[1:])


def page(items: Sequence[Any], *, limit: int, more: str | None = None, budget: int = ITEMS_CHARS,
         brief: Callable[[Any], T] | None = None) -> tuple[list[T], str | None]:
    """At most ``limit`` items from the cursor on, as many as fit in ``budget`` characters of JSON
    (always at least one), and the cursor of the next page (None when nothing is left).

    ``brief`` turns an item into what is shown; it is called only for the items of this page.

    Raises:
        ValueError: ``more`` is not a cursor.
    """
    start = cursor_offset(more)
    out: list[T] = []
    used = 0
    for raw in items[start:start + limit]:
        item = brief(raw) if brief else raw
        size = len(item.model_dump_json()) + 1
        if out and used + size > budget:
            break
        out.append(item)
        used += size
    end = start + len(out)
    return out, (f"@{end}" if end < len(items) else None)


def top_counts(values: Iterable[str] | Counter[str], *, top: int = COUNTS_TOP) -> dict[str, int]:
    """Counts of ``values``, largest first; past the ``top`` largest, the rest summed as ``other``."""
    counts = values if isinstance(values, Counter) else Counter(values)
    ranked = counts.most_common()
    out = dict(ranked[:top])
    rest = sum(n for _, n in ranked[top:])
    if rest:
        out["other"] = out.get("other", 0) + rest
    return out
