"""Site check configuration: overrides of arguments, disabling, and clear errors for bad entries."""

from __future__ import annotations

import pytest

from tools.checks import CHECKS, run_checks
from tools.errors import ConfigError

# Fires with defaults: Xid 79 on gpu017.
XID79 = "[Mon Mar  4 10:01:02 2026] NVRM: Xid (PCI:0000:b3:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"


def _facts(make_facts):
    return make_facts(("kernel/gpu017.log", "kernel-log", XID79), **{"kernel/gpu017.log": {"node": "gpu017"}})


def test_every_check_runs_by_default_and_overrides_change_only_their_check(make_facts):
    facts = _facts(make_facts)
    assert [f.check for f in run_checks(facts).findings] == ["gpu_xid"]
    assert run_checks(facts, [{"check": "gpu_xid", "args": {"min_events": 2}}]).findings == []
    assert run_checks(facts, [{"check": "gpu_xid", "enabled": False}]).findings == []
    assert [f.check for f in run_checks(facts, [{"check": "storage_full", "args": {"full_pct": 80}}]).findings] == ["gpu_xid"]


def test_a_check_that_raises_is_recorded_and_the_others_still_run(make_facts, monkeypatch):
    # A broken check (here: one whose function raises) becomes an Unreadable record; gpu_xid still fires.
    from tools.checks import base

    def broken(facts, cfg):
        raise ZeroDivisionError("division by zero in a check")

    spec = CHECKS["storage_full"]
    monkeypatch.setitem(CHECKS, "storage_full", base.CheckSpec(broken, spec.config, spec.description))
    run = run_checks(_facts(make_facts))
    assert [f.check for f in run.findings] == ["gpu_xid"]
    assert [(u.kind, u.check) for u in run.failed] == [("check", "storage_full")]
    assert "ZeroDivisionError" in run.failed[0].reason


@pytest.mark.parametrize("entry, words", [
    ({"check": "no_such_check"}, "unknown check 'no_such_check'"),
    ({"check": "gpu_xid", "args": {"min_event": 2}}, "checks.gpu_xid.args.min_event"),
    ({"check": "gpu_xid", "args": {"min_events": "many"}}, "checks.gpu_xid.args.min_events"),
    ({"check": "gpu_xid", "run": "rm -rf /"}, "checks: run"),
])
def test_bad_entries_are_named(make_facts, entry, words):
    with pytest.raises(ConfigError, match=words.replace(".", r"\.").replace("(", r"\(")):
        run_checks(_facts(make_facts), [entry])


def test_registry_is_complete():
    assert len(CHECKS) >= 28
