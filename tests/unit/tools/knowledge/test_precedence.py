"""The cause-precedence table holds DESIGN.md's rule: where evidence supports a more specific cause, the
specific one is the root cause and the general one a symptom — for every pair the table names, as the
built-in model applies it (reading the table from its instructions)."""

from __future__ import annotations

import pytest

from gateway.builtin.decide import decide
from gateway.builtin.precedence import read_precedence
from tools.knowledge.precedence import CONFIDENCE, STRENGTHS, SUPERSEDES, confidence, render_precedence, supersedes
from tools.models.ids import ROOT_CAUSES

TABLE = read_precedence([{"role": "system", "content": render_precedence()}])
PAIRS = [(a, b) for a, bs in SUPERSEDES.items() for b in bs]


def _finding(cause: str, culprits: list[str], strength: str, conf: float) -> dict:
    return {"check": "t", "root_cause": cause, "message": f"{cause} here", "culprits": culprits, "evidence": [],
            "confidence": conf, "strength": strength, "suggested_actions": []}


def test_every_cause_named_is_a_design_root_cause():
    named = set(SUPERSEDES) | {b for bs in SUPERSEDES.values() for b in bs}
    assert named <= set(ROOT_CAUSES) - {"healthy", "inconclusive"}


def test_no_cause_explains_itself_or_is_explained_back():
    for a, b in PAIRS:
        assert a != b and not supersedes(b, a), (a, b)


def test_the_model_reads_the_same_table_the_agent_renders():
    assert TABLE.strengths == list(STRENGTHS)
    assert {a: sorted(bs) for a, bs in TABLE.supersedes.items()} == {a: sorted(bs) for a, bs in SUPERSEDES.items()}


def test_confidence_follows_strength():
    order = [confidence(s) for s in STRENGTHS]
    assert order == sorted(order, reverse=True)
    assert all(confidence(s, corroborated=True) > confidence(s) for s in STRENGTHS)
    assert set(CONFIDENCE) == set(STRENGTHS)


@pytest.mark.parametrize("specific,general", PAIRS, ids=[f"{a}>{b}" for a, b in PAIRS])
def test_specific_cause_wins_over_the_symptom_it_explains(specific: str, general: str):
    # Same evidence strength, the symptom even more confident, linked by a shared job: the specific wins.
    found = [_finding(general, ["job:42", "node:n9"], "symptom", 0.7),
             _finding(specific, ["job:42", "node:n1"], "symptom", 0.6)]
    assert decide("What happened?", found, TABLE)["root_cause"] == specific


@pytest.mark.parametrize("specific,general", PAIRS[:12], ids=[f"{a}>{b}" for a, b in PAIRS[:12]])
def test_unlinked_findings_are_judged_on_their_own(specific: str, general: str):
    # No shared culprit: two separate problems; the stronger evidence leads.
    found = [_finding(general, ["job:42"], "direct", 0.9), _finding(specific, ["job:7"], "symptom", 0.6)]
    assert decide("What happened?", found, TABLE)["root_cause"] == general
