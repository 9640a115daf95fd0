"""Ranking findings into causes: symptoms set aside by the precedence table, then scored.

A finding is a *symptom* when another finding it shares a culprit with has a cause that explains its cause
(the table's supersedes map) and rests on evidence at least as strong — an NCCL timeout in job 42 is the
symptom of an Xid on job 42's node, but a CUDA OOM in a job log cannot explain away a link-down line. The
remaining findings are grouped by root cause; a cause scores its best confidence, a little for each
corroborating finding, and a bonus (or a penalty) for being about what the question names. A cause whose
findings name only other workloads (jobs or pods the question did not ask about, and no node, link or file
system) ranks below every cause about what was asked: another job's timeout cannot answer why this one is slow;
nor, once a cause about the asked job exists, a fault of a node the question did not name and the cause does not
tie to that job.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from gateway.builtin.precedence import Precedence

__all__ = ["Ranked", "rank", "mentions", "NO_CAUSE", "RELEVANCE_BONUS", "UNRELATED_PENALTY"]

NO_CAUSE = ("healthy", "inconclusive")
RELEVANCE_BONUS = 0.1
UNRELATED_PENALTY = 0.2
_CORROBORATION = 0.03
_WORKLOADS = ("job:", "pod:")


@dataclass
class Ranked:
    """One candidate root cause."""

    cause: str
    score: float
    findings: list[dict[str, Any]]
    symptoms: list[dict[str, Any]] = field(default_factory=list)
    """Findings of other causes this cause explains (shown as symptoms in the summary)."""
    elsewhere: bool = False
    """Only about workloads the question did not name (ranked after every cause about what was asked)."""


def _names(culprit: str) -> set[str]:
    """How a question may name a culprit: ``pod:ns/name`` as ``ns/name`` or ``name``; ``job:123_4`` as
    ``123_4`` or its array ``123``."""
    name = culprit.split(":", 1)[-1].lower()
    names = {name, name.rsplit("/", 1)[-1]}
    if culprit.startswith("job:") and "_" in name:  # an array task is named by its array's id too
        names.add(name.split("_", 1)[0])
    return names


def mentions(finding: dict[str, Any], entities: set[str]) -> bool:
    """Whether a culprit of the finding is one of the named entities (a pod also by the name of the
    workload that owns it: ``llm-ft-70b`` names ``pod:ml/llm-ft-70b-worker-0``)."""
    for c in finding.get("culprits", []):
        names = _names(c)
        if names & entities:
            return True
        if c.startswith("pod:") and any(n.startswith(f"{e}-") for n in names for e in entities if len(e) >= 3):
            return True
    return False


def _linked(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return bool(set(a.get("culprits", [])) & set(b.get("culprits", [])))


def rank(findings: list[dict[str, Any]], entities: set[str], table: Precedence) -> list[Ranked]:
    """Candidate causes, best first (``healthy``/``inconclusive`` findings are not candidates)."""
    real = [f for f in findings if f.get("root_cause") not in NO_CAUSE]
    explained_by: dict[int, dict[str, Any]] = {}
    for i, f in enumerate(real):
        for g in real:
            if g is f or not table.explains(g["root_cause"], f["root_cause"]) or not _linked(f, g):
                continue
            if table.rank(g.get("strength")) >= table.rank(f.get("strength")):
                explained_by[i] = g
                break
    primary = [f for i, f in enumerate(real) if i not in explained_by]
    asked = bool(entities) and any(mentions(f, entities) for f in real)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in primary:
        groups[f["root_cause"]].append(f)
    out: list[Ranked] = []
    for cause, fs in groups.items():
        fs.sort(key=lambda f: -f.get("confidence", 0.0))
        score = fs[0].get("confidence", 0.0) + _CORROBORATION * min(len(fs) - 1, 3)
        about = not entities or any(mentions(f, entities) for f in fs) or any(
            mentions(s, entities) for i, s in enumerate(real) if explained_by.get(i) in fs)
        if asked:
            score += RELEVANCE_BONUS if about else -UNRELATED_PENALTY
        symptoms = [s for i, s in enumerate(real) if explained_by.get(i) in fs]
        out.append(Ranked(cause=cause, score=round(min(score, 0.99), 3), findings=fs, symptoms=symptoms,
                          elsewhere=bool(entities) and not about and (_only_workloads(fs) or (asked and _only_hosts(fs)))))
    out.sort(key=lambda r: (r.elsewhere, -r.score, -max(table.rank(f.get("strength")) for f in r.findings)))
    return out


def _only_hosts(findings: list[dict[str, Any]]) -> bool:
    """Only nodes and workloads, none of them asked about, while another cause is about what was asked: a
    drained node elsewhere does not answer why the named job waits. (File systems, links and targets still
    compete on their score: they reach every job.)"""
    culprits = [c for f in findings for c in f.get("culprits", [])]
    return bool(culprits) and all(c.startswith((*_WORKLOADS, "node:", "k8snode:")) for c in culprits)


def _only_workloads(findings: list[dict[str, Any]]) -> bool:
    culprits = [c for f in findings for c in f.get("culprits", [])]
    return bool(culprits) and all(c.startswith(_WORKLOADS) for c in culprits)
