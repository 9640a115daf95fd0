"""What a follow-up question is about: the nodes and jobs it names that the evidence knows, and its intent.

Names are matched against the facts (a word counts as a node only if a node of that name was read:
Slurm, Kubernetes, DCGM or a kernel log), so ``why not gpu005?`` finds gpu005 and ``why not?`` finds
nothing. Intents are keyword rules, tried in a fixed order: cost, log lines, a named node or job, the
plans, an explanation. A question that matches none is left to the model (or, with the built-in
model, diagnosed afresh over the same evidence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from tools.facts import Facts

__all__ = ["Intent", "Asked", "read_question"]

Intent = Literal["cost", "logs", "node", "job", "plans", "explain"]

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*[A-Za-z0-9]|[A-Za-z0-9]")
_RULES: tuple[tuple[Intent, re.Pattern[str]], ...] = (
    ("cost", re.compile(r"\b(cost|costs|price|impact|blast|lose|what would|what happens if|gpu[- ]?hours?)\b", re.I)),
    ("logs", re.compile(r"\b(logs?|lines?|excerpts?|quote|messages?)\b", re.I)),
    ("plans", re.compile(r"\b(fix|fixes|plans?|actions?|what should|what do (we|i)|next steps?|remediat\w*)\b", re.I)),
    ("explain", re.compile(r"\b(why|explain|how sure|confiden\w*|certain|evidence|reason(ing)?|symptoms?)\b", re.I)),
)


@dataclass(frozen=True)
class Asked:
    """A follow-up question, read."""

    intent: Intent | None
    nodes: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)


def _known_nodes(facts: Facts) -> set[str]:
    def build() -> set[str]:
        names = set(facts.node_names())
        names |= {s.node for s in facts.gpu_samples if s.node}
        names |= {e.node for e in facts.kernel_events if e.node}
        return names
    return facts.cached("chat_node_names", build)


def read_question(question: str, facts: Facts) -> Asked:
    """The intent of ``question`` and the known nodes and jobs it names (in the order named)."""
    nodes: list[str] = []
    jobs: list[str] = []
    known = _known_nodes(facts)
    for word in _WORD.findall(question):
        w = word.rstrip(".,?!:;")
        bare = w.split(":", 1)[-1]
        if bare in known and bare not in nodes:
            nodes.append(bare)
        elif (facts.job(bare) or facts.acct_job(bare)) and bare not in jobs:
            jobs.append(bare)
    intent: Intent | None = None
    for name, rule in _RULES:
        if name in ("plans", "explain") and (nodes or jobs):
            break  # "why not gpu005?" is about gpu005, not about the diagnosis in general
        if rule.search(question):
            intent = name
            break
    if intent is None and nodes:
        intent = "node"
    elif intent is None and jobs:
        intent = "job"
    return Asked(intent=intent, nodes=nodes, jobs=jobs)
