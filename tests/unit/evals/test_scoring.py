"""Action matching for expected and forbidden actions."""

from __future__ import annotations

from evals.scoring import action_matches, forbidden_matches
from tools.models.findings import ActionSpec

RESUB = "resubmit_from_checkpoint"


def spec(**kw) -> ActionSpec:
    return ActionSpec.model_validate({"type": RESUB, "job": "7", **kw})


def test_expected_action_needs_its_key_parameters_and_excluded_nodes():
    want = spec(exclude_nodes=["gpu017"], checkpoint="/ckpt/step_100")
    assert action_matches(want, spec(exclude_nodes=["gpu017", "gpu018"], checkpoint="/ckpt/step_100"))
    assert not action_matches(want, spec(exclude_nodes=[], checkpoint="/ckpt/step_100"))
    assert not action_matches(want, spec(exclude_nodes=["gpu017"], checkpoint="/ckpt/step_200"))
    assert not action_matches(want, spec(exclude_nodes=["gpu017"], checkpoint="/ckpt/step_100", job="8"))


def test_forbidden_without_exclude_nodes_matches_any_such_proposal():
    assert forbidden_matches(ActionSpec(type="cancel_job"), ActionSpec(type="cancel_job", job="7"))
    assert forbidden_matches(spec(), spec(exclude_nodes=["gpu017"]))


def test_forbidden_with_explicit_exclude_nodes_matches_exactly_that_exclusion():
    forbidden = spec(exclude_nodes=[])  # "a resubmit that excludes nothing"
    assert forbidden_matches(forbidden, spec())
    assert not forbidden_matches(forbidden, spec(exclude_nodes=["gpu017"]))
    assert not forbidden_matches(spec(exclude_nodes=["gpu018"]), spec(exclude_nodes=["gpu017"]))


def test_a_kubernetes_node_culprit_matches_under_either_prefix():
    from evals.incident import Expected
    from evals.scoring import score_case
    from tools.models.findings import Diagnosis

    d = Diagnosis(question="q", root_cause="gpu_hardware_fault", culprits=["k8snode:gpu-h100-05"], confidence=0.9,
                  summary="x", proposed_actions=[])
    for want in ("node:gpu-h100-05", "k8snode:gpu-h100-05"):
        s = score_case(Expected(root_cause="gpu_hardware_fault", culprits=[want]), d)
        assert not s.missing_culprits and s.culprit_precision == 1.0
    assert score_case(Expected(root_cause="gpu_hardware_fault", culprits=["node:gpu-h100-06"]), d).missing_culprits
