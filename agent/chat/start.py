"""Opening a chat session: on a snapshot, on the live cluster, or resumed from the run store.

The evidence is read once here (a snapshot parsed, or one live collection) and every turn of the
session reads that same ReadContext. The approval side (policy engine, approval store) is built on
first use of /approve, /deny or /plan, so a session that only asks questions never loads the policy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.chat.approve import ChatApprovals
from agent.chat.history import ChatLog
from agent.chat.session import ChatSession
from agent.execute import ExecutionSetup
from agent.identity import os_user
from agent.render.view import evidence_root
from agent.settings import WardenSettings
from agent.store import RunStore, find_run
from gateway.config import BUILTIN_MODEL
from tools.errors import ConfigError, SnapshotError
from tools.models.findings import ActionSpec, PlannedAction
from tools.read.context import ReadContext

__all__ = ["ChatStart", "open_chat"]


@dataclass
class ChatStart:
    """A session ready for the REPL."""

    session: ChatSession
    approvals: Callable[[], ChatApprovals]
    default_question: str | None = None


def _incident_question(path: Path) -> str | None:
    from evals.incident import INCIDENT_FILE, load_incident

    return load_incident(path).question if (path / INCIDENT_FILE).is_file() else None


def _live(config: Path | None) -> tuple[Any, Any, ReadContext]:
    from agent.live.act import collect_live
    from agent.live.config import load_live_config
    from agent.live.session import make_runner

    cfg = load_live_config(config)
    runner = make_runner(cfg.plan_input())
    return cfg, runner, collect_live(cfg, runner=runner).ctx


def _approvals(session: ChatSession, settings: WardenSettings, *, live: tuple[Any, Any] | None,
               execute: bool) -> Callable[[], ChatApprovals]:
    built: list[ChatApprovals] = []

    def make() -> ChatApprovals:
        if built:
            return built[0]
        store = settings.open_approvals(session.audit)
        d = session.diagnosis
        if live is not None and execute:
            from agent.live.act import setup_for

            cfg, runner = live
            setup = setup_for(cfg, settings, requester=session.requester, execute=True, facts=session.ctx.facts,
                              runner=runner, diagnosis=d)
            propose = dataclasses.replace(setup, audit=session.audit, approvals=store)
            run = propose
        else:
            propose = ExecutionSetup(engine=settings.engine(), approvals=store, audit=session.audit,
                                     requester=session.requester, groups=settings.groups_of(session.requester),
                                     approver_groups=settings.approvers, runner=None, dry_run=False,
                                     facts=session.ctx.facts, approval_ttl_s=settings.approval_ttl_s,
                                     autonomy=settings.autonomy, fleet=settings.fleet, diagnosis=d,
                                     condition=d.root_cause if d else None)
            run = dataclasses.replace(propose, dry_run=True)
        refine = None
        if live is not None:
            from agent.live.act import live_specs

            cfg, runner = live

            def refine(planned: PlannedAction) -> ActionSpec | None:
                assert session.diagnosis is not None
                one = session.diagnosis.model_copy(update={"proposed_actions": [planned]})
                specs = live_specs(one, session.ctx.facts, cfg, runner)
                return specs[0] if specs else None

        built.append(ChatApprovals(propose_setup=propose, run_setup=run, approver=os_user(),
                                   can_execute=live is not None and execute, live_spec=refine))
        return built[0]

    return make


def open_chat(path: Path | None = None, *, live: bool = False, config: Path | None = None, model: str | None = None,
              resume: str | None = None, execute: bool = False, db: Path | None = None,
              model_override: Any = None, gateway_config: Path | None = None) -> ChatStart:
    """Build a session (see the module docstring).

    Raises:
        ConfigError: neither or both of PATH and --live, --execute without --live, an unknown run to
            resume, an invalid config; SnapshotError: PATH is no incident or snapshot directory.
    """
    settings = WardenSettings.load()
    store = RunStore(db)
    if execute and not (live or (resume and not path)):
        raise ConfigError("--execute acts on the live cluster: give --live")
    prior = None
    if resume is not None:
        run, d = find_run(resume, store.path)
        if d is None:
            raise ConfigError(f"run {run.id[:12]} has no diagnosis ({run.status}); nothing to resume")
        row = ChatLog(store).session(run.id)
        if row and row["current_run"] != run.id:
            d = find_run(row["current_run"], store.path)[1] or d
        prior = (run.id, d)
        model = model or (row["model"] if row else run.model) or BUILTIN_MODEL
        live = live or run.target.startswith("live:")
        path = path or (None if live else Path(run.target))
    if live == (path is not None):
        raise ConfigError("give an incident or snapshot PATH, or --live (not both)")
    live_parts = None
    if path is not None:
        root = evidence_root(path)
        if root is None:
            raise SnapshotError(f"{path}: not an incident (incident.yaml) or snapshot (manifest.yaml) directory")
        ctx, target, question = ReadContext.from_snapshot(root), str(path.absolute()), _incident_question(path)
    else:
        cfg, runner, ctx = _live(config)
        root, target, question, live_parts = None, f"live:{cfg.cluster}", None, (cfg, runner)
    ctx.facts  # noqa: B018 - read the evidence once, now: a bad file is an error before the first question
    session = ChatSession(ctx=ctx, target=target, store=store, audit=settings.open_audit(), requester=os_user(),
                          root=root, model=model or BUILTIN_MODEL, model_override=model_override,
                          limits=settings.limits)
    if gateway_config is not None:
        from agent.gateway_setup import load_gateway_config

        session.gateway_config = load_gateway_config(gateway_config)
    if model_override is None and session.model != BUILTIN_MODEL:
        from agent.gateway_setup import check_alias

        check_alias(session.model, session.gateway())  # an unknown alias is an error now, not after a diagnosis
    if prior is not None:
        session.resume(*prior)
    return ChatStart(session=session, approvals=_approvals(session, settings, live=live_parts, execute=execute),
                     default_question=question)
