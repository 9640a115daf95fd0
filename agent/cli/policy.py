"""`warden policy check PLAN.json`: explain what the policy decides for one plan."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

from agent.blast import BlastRadius, blast_radius, resource_of
from agent.cli.errors import warden_errors
from agent.render.safe import shell_command
from agent.settings import WardenSettings
from policies import PolicyError, PolicyRequest, explain
from tools.actions import build_action
from tools.errors import ConfigError
from tools.models.findings import ActionSpec
from tools.read.context import ReadContext

__all__ = ["policy_app", "policy_check_cmd", "load_spec"]

policy_app = typer.Typer(help="Inspect Warden's Cedar policy.", no_args_is_help=True)


def load_spec(path: Path) -> ActionSpec:
    """An ActionSpec from a Plan JSON (``action`` + ``params``), an ActionSpec JSON (``type`` +
    fields), or one item of ``diagnose --json``'s ``proposed_actions`` (``spec`` + ``commands``);
    ``-`` reads standard input.

    Raises:
        ConfigError: naming the file when it is unreadable, not JSON, or none of these shapes.
    """
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ConfigError(f"{path}: cannot read plan JSON: {' '.join(str(e).split())[:200]}") from None
    if isinstance(data, dict) and isinstance(data.get("spec"), dict) and "plan_hash" in data:
        data = data["spec"]  # a PlannedAction, as diagnose --json prints each proposed action
    if isinstance(data, dict) and "action" in data and isinstance(data.get("params"), dict):
        fields = set(ActionSpec.model_fields)
        data = {"type": data["action"], **{k: v for k, v in data["params"].items() if k in fields and v is not None}}
    try:
        return ActionSpec.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ConfigError(f"{path}: not a Plan or ActionSpec: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def policy_check_cmd(
    plan: Annotated[Path, typer.Argument(help="A Plan JSON, an ActionSpec JSON, or one item of `diagnose --json`'s proposed_actions; - reads stdin.")],
    principal: Annotated[str, typer.Option("--principal", help="Who asks Warden to act.")] = "warden",
    groups: Annotated[str, typer.Option("--groups", help="The principal's groups, comma-separated.")] = "",
    approved_by: Annotated[str | None, typer.Option("--approved-by", help="Check as if this user approved the plan.")] = None,
    approver_groups: Annotated[str | None, typer.Option("--approver-groups", help="The approver's groups (default: from config).")] = None,
    snapshot: Annotated[Path | None, typer.Option("--snapshot", help="Compute the blast radius from this snapshot's evidence.")] = None,
    partition: Annotated[str | None, typer.Option("--partition", help="Partition of the target (when no snapshot).")] = None,
    drained_last_hour: Annotated[int, typer.Option("--drained-last-hour", help="Nodes Warden drained in the partition in the last hour.")] = 0,
    gpu_share_pct: Annotated[float, typer.Option("--gpu-share-pct", help="Share of the partition's GPUs out of service including this action (%).")] = 0.0,
    gpu_hours_killed: Annotated[float, typer.Option("--gpu-hours-killed", help="GPU-hours of running jobs the action kills.")] = 0.0,
    other_users_jobs: Annotated[int, typer.Option("--other-users-jobs", help="Jobs of other users the action touches.")] = 0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Decide for a dry run (only renders the plan).")] = False,
    mode: Annotated[str, typer.Option("--mode", help="Autonomy mode of the target's node group: observe, recommend or execute.")] = "recommend",
    json_out: Annotated[bool, typer.Option("--json", help="Print the decision as JSON.")] = False,
) -> None:
    """Explain the policy decision (allow, needs_approval, deny) for one plan, naming the policies
    that decided, the blast radius they saw and the exact commands (shell-quoted). Exits 1 on deny.

    Example: warden policy check plan.json --principal alice --groups oncall   (stdin: ... | warden policy check -)
    """
    with warden_errors(extra=(PolicyError,)):
        settings = WardenSettings.load()
        spec = load_spec(plan)
        p = build_action(spec).plan()
        if snapshot is not None:
            blast = blast_radius(spec, ReadContext.from_snapshot(snapshot).facts, requester=principal,
                                 audit=settings.open_audit())
        else:
            blast = BlastRadius(partition=partition, warden_drained_last_hour=drained_last_hour,
                                partition_gpu_share_pct=gpu_share_pct, running_gpu_hours_killed=gpu_hours_killed,
                                other_users_jobs_touched=other_users_jobs)
        kind, rid = resource_of(spec)
        a_groups = ([g for g in approver_groups.split(",") if g] if approver_groups is not None
                    else settings.groups_of(approved_by or ""))
        if mode not in ("observe", "recommend", "execute"):
            raise ConfigError(f"--mode {mode!r}: expected observe, recommend or execute")
        request = PolicyRequest(
            principal=principal, groups=[g for g in groups.split(",") if g], action=p.action, resource_type=kind,
            resource_id=rid, partition=blast.partition, dry_run=dry_run, approved=approved_by is not None,
            approver=approved_by or "", approver_groups=a_groups if approved_by else [],
            warden_drained_last_hour=blast.warden_drained_last_hour,
            partition_gpu_share_pct=blast.partition_gpu_share_pct,
            running_gpu_hours_killed=blast.running_gpu_hours_killed,
            other_users_jobs_touched=blast.other_users_jobs_touched, autonomy_mode=mode)
        decision = settings.engine().evaluate(request)
        if json_out:
            typer.echo(json.dumps({"plan_hash": p.plan_hash, "commands": p.commands,
                                   **decision.model_dump(mode="json")}, indent=2))
        else:
            out = Console(highlight=False, soft_wrap=True)
            out.print(explain(decision), markup=False)
            out.print(f"  plan {p.plan_hash}:", markup=False)
            for argv in p.commands:  # one shell-quoted line each (no prompt sign): pastes and runs exactly the argv
                out.print(f"    {shell_command(argv)}", markup=False)
    if decision.decision == "deny":
        raise typer.Exit(1)


policy_app.command("check")(policy_check_cmd)
