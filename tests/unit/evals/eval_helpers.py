"""Helpers for the eval-suite tests: tiny incident directories and hand-made Diagnoses."""

from __future__ import annotations

from pathlib import Path

import yaml

from tools.actions import plan_spec
from tools.models.findings import ActionSpec, Diagnosis

BUNDLED = Path(__file__).resolve().parents[3] / "evals" / "incidents"


def write_incident(root: Path, inc_id: str, *, root_cause: str, culprits: list[str] | None = None,
                   actions: list[dict] | None = None, forbidden: list[dict] | None = None,
                   tags: list[str] | None = None) -> Path:
    """An incident directory (incident.yaml + an empty snapshot/) for tests whose diagnose is hand-made."""
    d = root / inc_id
    (d / "snapshot").mkdir(parents=True)
    doc = {"id": inc_id, "title": f"test {inc_id}", "kind": "slurm", "question": f"What is wrong in {inc_id}?",
           "expected": {"root_cause": root_cause, "culprits": culprits or [], "actions": actions or [],
                        "forbidden": forbidden or []},
           "tags": tags or [], "source": "hand-made for tests"}
    (d / "incident.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    return d


def diagnosis(root_cause: str, culprits: list[str] = (), actions: list[dict] = (), summary: str = "x") -> Diagnosis:
    """A Diagnosis as the agent would return it, with real rendered plans."""
    return Diagnosis(question="q", root_cause=root_cause, culprits=list(culprits), confidence=0.9, summary=summary,
                     proposed_actions=[plan_spec(ActionSpec(**a)) for a in actions])
