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
    assert [f.check for f in run_checks(facts)] == ["gpu_xid"]
    assert run_checks(facts, [{"check": "gpu_xid", "args": {"min_events": 2}}]) == []
    assert run_checks(facts, [{"check": "gpu_xid", "enabled": False}]) == []
    assert [f.check for f in run_checks(facts, [{"check": "storage_full", "args": {"full_pct": 80}}])] == ["gpu_xid"]


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
