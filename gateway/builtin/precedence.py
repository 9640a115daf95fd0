"""The cause-precedence table as the built-in model reads it: from its own instructions, like an LLM.

Warden's agent puts the table in the system instructions (tools.knowledge.precedence.render_precedence);
the built-in model parses those lines instead of importing tools/, so both models rank by the same table::

    Evidence strength, strongest first: direct > state > symptom > heuristic (...)
    Cause precedence (a cause explains the causes after '>' when they share a culprit):
    - gpu_hardware_fault > interconnect_fault, straggler_node, ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Precedence", "read_precedence"]

_STRENGTH = re.compile(r"^Evidence strength, strongest first: (?P<order>[a-z_ >]+?)(?: \(|$)")
_RULE = re.compile(r"^- (?P<cause>[a-z_]+) > (?P<explained>[a-z_, ]+)$")


@dataclass
class Precedence:
    """Strength order (strongest first) and the supersedes map."""

    strengths: list[str] = field(default_factory=lambda: ["direct", "state", "symptom", "heuristic"])
    supersedes: dict[str, set[str]] = field(default_factory=dict)

    def rank(self, strength: str | None) -> int:
        """Higher is stronger; an unknown strength ranks lowest."""
        return len(self.strengths) - self.strengths.index(strength) if strength in self.strengths else 0

    def explains(self, a: str, b: str) -> bool:
        """True when cause ``a`` explains cause ``b``."""
        return b in self.supersedes.get(a, set())


def read_precedence(messages: list[dict[str, Any]]) -> Precedence:
    """The table from the system/developer messages of a request (defaults when none carries it)."""
    table = Precedence()
    for m in messages:
        if m.get("role") not in ("system", "developer"):
            continue
        content = m.get("content")
        text = content if isinstance(content, str) else " ".join(
            p.get("text", "") for p in content or [] if isinstance(p, dict))
        for line in text.splitlines():
            line = line.strip()
            s = _STRENGTH.match(line)
            if s:
                table.strengths = [w.strip() for w in s["order"].split(">") if w.strip()]
                continue
            r = _RULE.match(line)
            if r:
                table.supersedes[r["cause"]] = {c.strip() for c in r["explained"].split(",") if c.strip()}
    return table
