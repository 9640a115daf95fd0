"""Every action declares its facts on its class; every action that changes something verifies it;
the policy layer's classification and the derived tables agree with the declarations."""

from __future__ import annotations

import pytest

from policies.engine import ACTION_REVERSIBILITY
from tools.actions import ACTION_FACTS, ACTIONS, Action, actions_where, reversibility_of
from tools.models.ids import ACTION_TYPES


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_every_action_that_promises_an_effect_overrides_verify(name: str) -> None:
    cls = ACTIONS[name]
    # read-only ones too: a GPU diagnostic must report, a notification must be accepted
    assert cls.verify is not Action.verify, f"{name} does not override verify()"
    assert cls.verify.__doc__, f"{name}.verify has no docstring saying what it reads back"


def test_non_read_only_actions_enumerated() -> None:
    mutating = {n for n, f in ACTION_FACTS.items() if f.reversibility != "read_only"}
    assert mutating == set(ACTION_TYPES) - {"run_gpu_diagnostic", "notify_owner"}
    assert all(ACTIONS[n].verify is not Action.verify for n in mutating)


def test_facts_are_declared_per_class_and_agree_with_the_cedar_schema() -> None:
    assert set(ACTION_FACTS) == set(ACTION_TYPES)
    for name, facts in ACTION_FACTS.items():
        assert ACTION_REVERSIBILITY[name] == facts.reversibility == reversibility_of(name), name
    assert reversibility_of("not_an_action") == "irreversible"  # unknown counts as the most dangerous


def test_derived_tables() -> None:
    assert actions_where(takes_out_of_service=True) == {"drain_node", "cordon_node", "drain_k8s_node"}
    assert actions_where(returns_to_service=True) == {"resume_node", "uncordon_node"}
    assert actions_where(platform="kubernetes") == {"cordon_node", "uncordon_node", "drain_k8s_node", "evict_pod"}
    assert {n for n, f in ACTION_FACTS.items() if f.kills_jobs} == {"cancel_job", "requeue_job", "evict_pod",
                                                                   "drain_k8s_node"}
