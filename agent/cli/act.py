"""`warden act`: diagnose the live cluster and carry out the proposed actions under policy."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agent.cli.errors import warden_errors
from agent.cli.gateway_option import GatewayConfigOption
from agent.render.safe import clean, clean_line, shell_command
from agent.execute import ActionOutcome
from agent.gateway_setup import load_gateway_config
from agent.gates import record_override
from agent.identity import acting_user
from agent.live.act import act_live, execute_approved_live
from agent.live.config import load_live_config
from agent.settings import WardenSettings
from agent.store import RunStore
from gateway.config import BUILTIN_MODEL
from policies import PolicyError

__all__ = ["act_cmd"]


def _show(o: ActionOutcome, out: Console) -> None:
    mode = f" ({o.group.mode} mode, {o.group.kind} {o.group.name})" if o.group and o.group.name else ""
    out.print(clean_line(f"[{o.status}]{mode} {o.message}"), markup=False)  # cluster text: shown escaped
    if o.plan:
        for argv in o.plan.commands:
            out.print(f"    $ {shell_command(argv)}", markup=False)
    if o.verification is not None:
        out.print(clean_line(f"    verify: {'ok' if o.verification.ok else 'FAILED'} — {o.verification.observed}"),
                  markup=False)
    for e in o.evidence:
        out.print(clean_line(f"    evidence: {e.text}"), markup=False)
    if o.status == "pending_approval":
        out.print(f"    approve (as an on-call member): warden approve {o.approval_id}; then: warden act --approved "
                  f"{o.approval_id} --execute", markup=False)


def act_cmd(
    execute: Annotated[bool, typer.Option("--execute", help="Run allowed actions for real; default: print the plans only.")] = False,
    approved: Annotated[str | None, typer.Option("--approved", help="Execute this approved action (approval id) instead of diagnosing.")] = None,
    question: Annotated[str | None, typer.Option("--question", "-q", help="What to ask.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Live config (default $WARDEN_HOME/warden.toml).")] = None,
    requester: Annotated[str | None, typer.Option("--as", help="Who Warden acts for; only where config.yaml says this channel authenticates names. Default: the login user.")] = None,
    override_resume: Annotated[str | None, typer.Option("--override-resume", help="Record that NODE may return to service without a passing GPU diagnostic (needs --reason); nothing else runs.")] = None,
    reason: Annotated[str | None, typer.Option("--reason", help="Why (with --override-resume); written to the audit log.")] = None,
    model: Annotated[str, typer.Option("--model", help="Gateway model alias.")] = BUILTIN_MODEL,
    gateway_config: GatewayConfigOption = None,
) -> None:
    """Diagnose the live cluster and send each proposed action through policy → approval → audit →
    execute → verify. Without --execute only the plans and decisions are printed. Actions that need
    an approval wait for `warden approve`, then run with --approved ID --execute. Exit 1: an execution
    failed (or, with --approved, the approved action was refused or denied and did not run).

    Example: warden act --execute
    """
    out = Console(highlight=False, soft_wrap=True)
    with warden_errors(extra=(PolicyError,)):
        settings = WardenSettings.load()
        who = acting_user(requester, allowed=settings.asserted_identity, option="--as")
        if override_resume is not None:
            if not (reason or "").strip():
                raise typer.BadParameter("--override-resume needs --reason")
            rec = record_override(settings.open_audit(), override_resume, who, reason or "")
            out.print(f"recorded operator override #{rec.seq}: {override_resume} may return to service "
                      f"(by {who}: {rec.payload['reason']})", markup=False)
            return
        cfg = load_live_config(config)
        if approved:
            if not execute:
                raise typer.BadParameter("--approved needs --execute")
            outcome = execute_approved_live(cfg, settings, approved, requester=who)
            _show(outcome, out)
            if outcome.status != "executed":  # failed, or refused / denied now: the approved action did not run
                raise typer.Exit(1)
            return
        else:
            run, outcomes = act_live(cfg, settings, requester=who, execute=execute, question=question, model=model,
                                     store=RunStore(None), limits=settings.limits,
                                     gateway_config=load_gateway_config(gateway_config))
            d = run.diagnosis
            assert d is not None
            out.print(clean(f"{d.root_cause} (confidence {d.confidence:.2f}): {', '.join(d.culprits) or '-'}\n{d.summary}"),
                      markup=False)
            for job, checks in run.checkpoint_checks.items():
                for c in checks:
                    out.print(clean_line(f"  checkpoint of job {job}: {c.path} "
                                         f"{'verifies' if c.ok else 'FAILS: ' + (c.problem or '')}"), markup=False)
            if not outcomes:
                out.print("no actions proposed", markup=False)
            for o in outcomes:
                _show(o, out)
    if any(o.status == "failed" for o in outcomes):
        raise typer.Exit(1)
