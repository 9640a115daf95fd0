"""Every bundled incident, replayed through the snapshot source, real parsers, checks, the agent loop,
the in-process gateway and the built-in model: right cause, every expected culprit and action,
nothing forbidden. This is exactly what `warden diagnose <incident> --json` prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli.app import app
from evals.incident import find_incidents, load_incident
from evals.scoring import score_case
from tools.models.findings import Diagnosis

INCIDENTS = find_incidents(Path(__file__).resolve().parents[2] / "evals" / "incidents")


def test_bundle_has_enough_incidents():
    incidents = [load_incident(p) for p in INCIDENTS]
    causes = {i.expected.root_cause for i in incidents}
    assert len(incidents) >= 12
    assert len(causes - {"healthy"}) >= 10
    assert sum(i.expected.root_cause == "healthy" for i in incidents) >= 2
    assert all(i.source for i in incidents)


@pytest.mark.parametrize("path", INCIDENTS, ids=[p.name for p in INCIDENTS])
def test_incident_diagnosis(path: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["diagnose", str(path), "--json"])
    assert result.exit_code == 0, result.output
    d = Diagnosis.model_validate(json.loads(result.stdout))
    inc = load_incident(path)
    s = score_case(inc.expected, d)
    assert d.root_cause == inc.expected.root_cause, d.summary
    assert not s.missing_culprits, f"missing culprits {s.missing_culprits}; got {d.culprits}"
    assert s.actions_ok, f"missing actions {s.missing_actions}; got {[a.spec for a in d.proposed_actions]}"
    assert not s.forbidden_proposed, f"forbidden proposed: {s.forbidden_proposed}"
    if inc.expected.root_cause == "healthy":
        assert d.proposed_actions == []
