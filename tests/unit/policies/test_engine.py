"""The real Cedar engine on the real default policy: every action id against allow,
needs_approval and deny, the blast-radius limits, and policy files that must stop Warden."""

from __future__ import annotations

from pathlib import Path

import pytest

from policies import (
    PolicyConfig,
    PolicyConfigError,
    PolicyEngine,
    PolicyError,
    PolicyParseError,
    PolicyRequest,
    PolicyValidationError,
    SchemaError,
    explain,
)
from policies.engine import ACTION_REVERSIBILITY, DEFAULT_POLICY_PATH, DEFAULT_SCHEMA_PATH
from tools.actions import ACTION_FACTS, actions_where
from tools.models.ids import ACTION_TYPES

READ_ONLY_ACTIONS = actions_where(reversibility="read_only")
REVERSIBLE_ACTIONS = actions_where(reversibility="reversible")
IRREVERSIBLE_ACTIONS = actions_where(reversibility="irreversible")

RESOURCE = {
    "read": ("Partition", "gpu"),
    "run_gpu_diagnostic": ("Node", "gpu017"),
    "notify_owner": ("Job", "4242"),
    "drain_node": ("Node", "gpu017"),
    "resume_node": ("Node", "gpu017"),
    "hold_job": ("Job", "4242"),
    "release_job": ("Job", "4242"),
    "cordon_node": ("Node", "gpu-node-3"),
    "uncordon_node": ("Node", "gpu-node-3"),
    "update_job": ("Job", "4242"),
    "requeue_job": ("Job", "4242"),
    "resubmit_from_checkpoint": ("Job", "4242"),
    "resize_job": ("Job", "4242"),
    "cancel_job": ("Job", "4242"),
    "evict_pod": ("Pod", "train/worker-0"),
    "drain_k8s_node": ("Node", "gpu-node-3"),
}
ALL_ACTIONS = sorted(RESOURCE)
READ_ONLY = sorted(READ_ONLY_ACTIONS | {"read"})
REVERSIBLE = sorted(REVERSIBLE_ACTIONS)
IRREVERSIBLE = sorted(IRREVERSIBLE_ACTIONS)
MUTATING = REVERSIBLE + IRREVERSIBLE
DRAINS = ["cordon_node", "drain_k8s_node", "drain_node"]


@pytest.fixture(scope="module")
def engine() -> PolicyEngine:
    return PolicyEngine.load()


def req(action: str, **kw: object) -> PolicyRequest:
    rtype, rid = RESOURCE[action]
    fields: dict[str, object] = {
        "principal": "alice",
        "groups": ["oncall"],
        "action": action,
        "resource_type": rtype,
        "resource_id": rid,
        "partition": "gpu" if rtype in ("Node", "Job") else None,
        "dry_run": False,
    }
    fields.update(kw)
    return PolicyRequest.model_validate(fields)


def approved_by(approver: str, groups: list[str]) -> dict[str, object]:
    return {"approved": True, "approver": approver, "approver_groups": groups}


def test_every_design_action_id_is_covered() -> None:
    assert set(ALL_ACTIONS) == set(ACTION_TYPES) | {"read"}
    assert set(ACTION_REVERSIBILITY) == set(ALL_ACTIONS)
    for action in ALL_ACTIONS:
        expected = "read_only" if action in READ_ONLY else "reversible" if action in REVERSIBLE else "irreversible"
        assert ACTION_REVERSIBILITY[action] == expected, action


# ---- allow ---------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ALL_ACTIONS)
def test_dry_run_is_allowed(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, dry_run=True, principal="mallory", groups=[]))
    assert d.decision == "allow"
    assert "dry-run" in d.policy_ids


@pytest.mark.parametrize("action", ALL_ACTIONS)
def test_dry_run_is_the_default(engine: PolicyEngine, action: str) -> None:
    rtype, rid = RESOURCE[action]
    d = engine.evaluate(PolicyRequest(principal="alice", action=action, resource_type=rtype, resource_id=rid))  # type: ignore[arg-type]
    assert d.dry_run is True
    assert d.decision == "allow"


@pytest.mark.parametrize("action", READ_ONLY)
def test_read_only_actions_run_without_approval(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, groups=[]))
    assert (d.decision, d.policy_ids) == ("allow", ["read-only-actions"])
    assert d.allowed


@pytest.mark.parametrize("action", REVERSIBLE)
@pytest.mark.parametrize("group", ["oncall", "admins"])
def test_reversible_allowed_once_approved_by_oncall_or_admin(engine: PolicyEngine, action: str, group: str) -> None:
    d = engine.evaluate(req(action, **approved_by("bob", [group])))
    assert (d.decision, d.policy_ids) == ("allow", ["reversible-approved"])


@pytest.mark.parametrize("action", REVERSIBLE)
def test_reversible_may_be_approved_by_the_requester(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, **approved_by("alice", ["oncall"])))
    assert d.decision == "allow"


@pytest.mark.parametrize("action", IRREVERSIBLE)
@pytest.mark.parametrize("group", ["oncall", "admins"])
def test_irreversible_allowed_once_approved_by_a_second_person(engine: PolicyEngine, action: str, group: str) -> None:
    d = engine.evaluate(req(action, **approved_by("bob", [group])))
    assert (d.decision, d.policy_ids) == ("allow", ["irreversible-approved-by-second-person"])


# ---- needs_approval ------------------------------------------------------------------------


@pytest.mark.parametrize("action", REVERSIBLE)
def test_reversible_needs_approval(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action))
    assert (d.decision, d.policy_ids) == ("needs_approval", ["reversible-approved"])
    assert d.reversibility == "reversible"
    assert "oncall member or admin" in explain(d)


@pytest.mark.parametrize("action", IRREVERSIBLE)
def test_irreversible_needs_second_person(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, groups=["admins"]))
    assert (d.decision, d.policy_ids) == ("needs_approval", ["irreversible-approved-by-second-person"])
    assert "second person" in explain(d)


@pytest.mark.parametrize("action", MUTATING)
def test_requester_outside_oncall_still_only_needs_approval(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, principal="carol", groups=[]))
    assert d.decision == "needs_approval"


# ---- deny: approvals that do not count ------------------------------------------------------


@pytest.mark.parametrize("action", IRREVERSIBLE)
def test_irreversible_self_approval_denied(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, **approved_by("alice", ["oncall", "admins"])))
    assert (d.decision, d.policy_ids) == ("deny", ["no-self-approval-of-irreversible"])


@pytest.mark.parametrize("action", IRREVERSIBLE)
def test_self_approval_via_explicit_requester_denied(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, principal="warden-bot", groups=[], requester="bob", **approved_by("bob", ["oncall"])))
    assert d.decision == "deny"
    assert "no-self-approval-of-irreversible" in d.policy_ids


@pytest.mark.parametrize("action", MUTATING)
def test_approver_outside_oncall_and_admins_denied(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, **approved_by("dave", ["users"])))
    assert (d.decision, d.policy_ids) == ("deny", ["approver-must-be-oncall-or-admin"])


@pytest.mark.parametrize("action", MUTATING)
def test_approval_without_approver_denied(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, approved=True))
    assert d.decision == "deny"
    assert "approver-must-be-oncall-or-admin" in d.policy_ids


# ---- deny: blast radius, which no approval lifts -------------------------------------------


@pytest.mark.parametrize("action", DRAINS)
def test_drain_over_partition_share_denied_even_when_approved(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, partition_gpu_share_pct=25.5, **approved_by("bob", ["admins"])))
    assert (d.decision, d.policy_ids) == ("deny", ["drain-partition-share-limit"])
    assert "partition_gpu_share_pct=26 (limit 25)" in explain(d)


@pytest.mark.parametrize("action", DRAINS)
def test_drain_at_partition_share_limit_is_not_denied(engine: PolicyEngine, action: str) -> None:
    assert engine.evaluate(req(action, partition_gpu_share_pct=25.0)).decision == "needs_approval"


@pytest.mark.parametrize("action", DRAINS)
def test_drain_rate_limit_per_partition_hour(engine: PolicyEngine, action: str) -> None:
    assert engine.evaluate(req(action, warden_drained_last_hour=2)).decision == "needs_approval"
    d = engine.evaluate(req(action, warden_drained_last_hour=3, **approved_by("bob", ["oncall"])))
    assert (d.decision, d.policy_ids) == ("deny", ["drain-rate-limit"])


@pytest.mark.parametrize("action", DRAINS)
def test_both_drain_limits_reported_together(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, warden_drained_last_hour=9, partition_gpu_share_pct=90))
    assert (d.decision, d.policy_ids) == ("deny", ["drain-partition-share-limit", "drain-rate-limit"])


@pytest.mark.parametrize("action", sorted(set(ALL_ACTIONS) - set(DRAINS)))
def test_drain_limits_do_not_apply_to_other_actions(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, warden_drained_last_hour=50, partition_gpu_share_pct=100))
    assert d.decision in ("allow", "needs_approval")


@pytest.mark.parametrize("action", MUTATING)
def test_gpu_hours_killed_limit(engine: PolicyEngine, action: str) -> None:
    assert engine.evaluate(req(action, running_gpu_hours_killed=512.0)).decision == "needs_approval"
    d = engine.evaluate(req(action, running_gpu_hours_killed=512.1, **approved_by("bob", ["admins"])))
    assert (d.decision, d.policy_ids) == ("deny", ["gpu-hours-killed-limit"])


@pytest.mark.parametrize("action", MUTATING)
def test_other_users_jobs_limit(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, other_users_jobs_touched=11, **approved_by("bob", ["oncall"])))
    assert (d.decision, d.policy_ids) == ("deny", ["other-users-jobs-limit"])


@pytest.mark.parametrize("action", READ_ONLY)
def test_blast_radius_does_not_block_read_only(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, other_users_jobs_touched=99, running_gpu_hours_killed=10_000))
    assert d.decision == "allow"


@pytest.mark.parametrize("action", DRAINS)
def test_dry_run_of_an_over_limit_drain_is_allowed(engine: PolicyEngine, action: str) -> None:
    d = engine.evaluate(req(action, dry_run=True, partition_gpu_share_pct=80, warden_drained_last_hour=7))
    assert (d.decision, d.policy_ids) == ("allow", ["dry-run"])


def test_limits_come_from_config(tmp_path: Path) -> None:
    cfg = tmp_path / "policy.yaml"
    cfg.write_text("max_partition_gpu_share_pct: 50\nmax_drains_per_partition_per_hour: 1\n")
    engine = PolicyEngine.load(config=cfg)
    assert engine.config.max_partition_gpu_share_pct == 50
    assert engine.evaluate(req("drain_node", partition_gpu_share_pct=40)).decision == "needs_approval"
    assert engine.evaluate(req("drain_node", partition_gpu_share_pct=51)).policy_ids == ["drain-partition-share-limit"]
    assert engine.evaluate(req("drain_node", warden_drained_last_hour=1)).policy_ids == ["drain-rate-limit"]


def test_zero_drains_per_hour_forbids_every_drain() -> None:
    engine = PolicyEngine.load(config=PolicyConfig(max_drains_per_partition_per_hour=0))
    for action in DRAINS:
        assert engine.evaluate(req(action, **approved_by("bob", ["admins"]))).decision == "deny"


# ---- deny: malformed requests and hostile text ---------------------------------------------


@pytest.mark.parametrize(("action", "rtype"), [("drain_node", "Job"), ("cancel_job", "Node"), ("evict_pod", "Job")])
def test_action_on_wrong_resource_type_fails_closed(engine: PolicyEngine, action: str, rtype: str) -> None:
    d = engine.evaluate(req(action, resource_type=rtype, **approved_by("bob", ["admins"])))
    assert (d.decision, d.policy_ids) == ("deny", ["evaluation-error"])
    assert "not valid" in d.reasons[0]


def test_unknown_action_id_is_rejected() -> None:
    with pytest.raises(ValueError, match="action"):
        PolicyRequest(principal="alice", action="format_disk", resource_type="Node", resource_id="gpu017")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "hostile",
    [
        'gpu017"; permit(principal, action, resource);',
        "gpu017\n}; permit(principal,action,resource) when { true",
        "Warden::Group::\"admins\"",
    ],
)
def test_cluster_text_in_ids_stays_data(engine: PolicyEngine, hostile: str) -> None:
    d = engine.evaluate(req("drain_node", resource_id=hostile, partition=hostile))
    assert d.decision == "needs_approval"
    d = engine.evaluate(req("cancel_job", **approved_by(hostile, [])))
    assert d.decision == "deny"


def test_user_named_like_a_group_gains_nothing(engine: PolicyEngine) -> None:
    d = engine.evaluate(req("cancel_job", **approved_by("oncall", [])))
    assert d.policy_ids == ["approver-must-be-oncall-or-admin"]


# ---- site policies -------------------------------------------------------------------------


def test_site_policy_directory_adds_a_forbid(tmp_path: Path) -> None:
    (tmp_path / "site.cedar").write_text(
        '@id("no-drains-in-critical")\n@reason("partition critical is never drained by Warden")\n'
        'forbid (principal, action in Warden::Action::"drains", resource in Warden::Partition::"critical")\n'
        "unless { context.dry_run };\n"
    )
    engine = PolicyEngine.load([DEFAULT_POLICY_PATH, tmp_path])
    assert "no-drains-in-critical" in engine.policies
    d = engine.evaluate(req("drain_node", partition="critical", **approved_by("bob", ["admins"])))
    assert (d.decision, d.policy_ids) == ("deny", ["no-drains-in-critical"])
    assert "never drained" in explain(d)
    assert engine.evaluate(req("drain_node", partition="gpu")).decision == "needs_approval"


def test_policy_file_without_permits_denies_everything_mutating(tmp_path: Path) -> None:
    only = tmp_path / "reads.cedar"
    only.write_text('@id("reads")\npermit (principal, action == Warden::Action::"read", resource);\n')
    engine = PolicyEngine.load([only])
    d = engine.evaluate(req("drain_node"))
    assert (d.decision, d.policy_ids) == ("deny", ["implicit-deny"])
    assert engine.evaluate(req("read")).decision == "allow"


# ---- policy files that must stop Warden ----------------------------------------------------

DEFAULT_TEXT = DEFAULT_POLICY_PATH.read_text()


def _line_containing(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("old", "new", "error", "line_of"),
    [
        ("when { context.dry_run };", "when { context.dry_run == };", PolicyParseError, "context.dry_run == }"),
        ("permit (principal, action, resource)", "permit (principal, action resource)", PolicyParseError, "action resource"),
        ("@id(\"dry-run\")", "@id(\"dry-run\"", PolicyParseError, None),
        ("context.warden_drained_last_hour >=", "context.drained >=", PolicyValidationError, '@id("drain-rate-limit")'),
        ('@id("drain-rate-limit")\n', "", PolicyValidationError, '@reason("Warden already drained'),
        ('@id("dry-run")', '@id("read-only-actions")', PolicyValidationError, '@id("read-only-actions")'),
    ],
)
def test_broken_policy_file_stops_with_file_and_line(
    tmp_path: Path, old: str, new: str, error: type[PolicyError], line_of: str | None
) -> None:
    assert old in DEFAULT_TEXT
    broken = DEFAULT_TEXT.replace(old, new, 1)
    path = tmp_path / "broken.cedar"
    path.write_text(broken)
    with pytest.raises(error) as info:
        PolicyEngine.load([path])
    assert info.value.path == str(path)
    assert info.value.line is not None
    if line_of is not None:
        expected = broken.splitlines().index(next(x for x in broken.splitlines() if line_of in x)) + 1
        # duplicate @id: the second occurrence is the one reported
        if error is PolicyValidationError and "read-only-actions" in line_of:
            expected = [i for i, x in enumerate(broken.splitlines(), 1) if line_of in x][1]
        assert info.value.line == expected
    assert str(info.value).startswith(f"{path}:{info.value.line}: ")
    assert "\n" not in str(info.value)


def test_semantic_parse_error_names_the_policy(tmp_path: Path) -> None:
    path = tmp_path / "eq.cedar"
    path.write_text(DEFAULT_TEXT.replace("share_pct > context", "share_pct = context"))
    with pytest.raises(PolicyParseError) as info:
        PolicyEngine.load([path])
    start = _line_containing(DEFAULT_TEXT, '@id("drain-partition-share-limit")')
    assert f"starting at line {start}" in str(info.value)
    assert "not a valid operator" in info.value.reason


def test_missing_semicolon_at_end_of_file(tmp_path: Path) -> None:
    path = tmp_path / "tail.cedar"
    path.write_text(DEFAULT_TEXT + '\n@id("x")\npermit (principal, action, resource)\n')
    with pytest.raises(PolicyParseError) as info:
        PolicyEngine.load([path])
    assert info.value.line == len(DEFAULT_TEXT.splitlines()) + 3


def test_semicolons_inside_strings_and_comments_do_not_confuse_lines(tmp_path: Path) -> None:
    path = tmp_path / "tricky.cedar"
    path.write_text(
        '// a comment; with "quotes; and" semicolons;\n'
        '@id("a") @reason("x; y \\" ; z")\npermit (principal, action == Warden::Action::"read", resource);\n'
        '@id("b")\nforbid (principal, action, resource)\nwhen { context.dry_run && };\n'
    )
    with pytest.raises(PolicyParseError) as info:
        PolicyEngine.load([path])
    assert info.value.line == 6


def test_duplicate_id_across_files(tmp_path: Path) -> None:
    path = tmp_path / "dup.cedar"
    path.write_text('@id("dry-run")\npermit (principal, action == Warden::Action::"read", resource);\n')
    with pytest.raises(PolicyValidationError, match="already used at .*default.cedar"):
        PolicyEngine.load([DEFAULT_POLICY_PATH, path])


def test_templates_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "tpl.cedar"
    path.write_text('@id("t")\npermit (principal == ?principal, action, resource);\n')
    with pytest.raises(PolicyValidationError, match="templates") as info:
        PolicyEngine.load([path])
    assert info.value.line == 1


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(PolicyParseError, match="cannot read"):
        PolicyEngine.load([tmp_path / "absent.cedar"])
    latin = tmp_path / "latin.cedar"
    latin.write_bytes(b'// ok\n// caf\xe9\n@id("a") permit (principal, action, resource);\n')
    with pytest.raises(PolicyParseError, match="not UTF-8") as info:
        PolicyEngine.load([latin])
    assert info.value.line == 2


def test_directory_without_policies_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyValidationError, match="no Cedar policy files"):
        PolicyEngine.load([tmp_path])


def test_broken_schema_stops_warden(tmp_path: Path) -> None:
    schema = tmp_path / "broken.cedarschema"
    schema.write_text(DEFAULT_SCHEMA_PATH.read_text().replace("entity Pod;", "entity Pod"))
    with pytest.raises(SchemaError) as info:
        PolicyEngine.load(schema_path=schema)
    assert info.value.path == str(schema)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("max_partition_gpu_share_pct: 120\n", "max_partition_gpu_share_pct"),
        ("max_drains_per_partition_per_hour: -1\n", "max_drains_per_partition_per_hour"),
        ("max_partition_gpu_share_pct: '25'\n", "max_partition_gpu_share_pct"),
        ("allow_everything: true\n", "allow_everything"),
        ("- 25\n", "mapping"),
        ("max_partition_gpu_share_pct: [\n", "invalid YAML"),
    ],
)
def test_invalid_config_stops_warden(tmp_path: Path, text: str, match: str) -> None:
    cfg = tmp_path / "policy.yaml"
    cfg.write_text(text)
    with pytest.raises(PolicyConfigError, match=match) as info:
        PolicyEngine.load(config=cfg)
    assert info.value.path == str(cfg)


def test_empty_config_keeps_defaults(tmp_path: Path) -> None:
    cfg = tmp_path / "policy.yaml"
    cfg.write_text("")
    assert PolicyEngine.load(config=cfg).config == PolicyConfig()


def test_explain_lists_policies_and_blast_radius(engine: PolicyEngine) -> None:
    d = engine.evaluate(req("drain_node", partition_gpu_share_pct=40, warden_drained_last_hour=5))
    text = explain(d)
    assert text.splitlines()[0] == 'deny: drain_node on Node::"gpu017" (reversible)'
    assert "  - drain-partition-share-limit: " in text
    assert "warden_drained_last_hour=5 (limit 3)" in text
    assert len(d.policy_ids) == len(d.reasons)
