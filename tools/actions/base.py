"""The action contract: a typed plan first, execution only with an authorization for that plan.

    spec (ActionSpec) --build--> Action --plan()--> Plan (argv lists + hash)
                                        --execute(auth, runner)--> ExecutionResult
                                        --verify(runner)--> VerifyResult

``execute`` refuses unless given an ``Authorization`` whose plan hash equals this plan's hash and
whose decision is ``allow`` (invariant 1: no mutating command runs unless policy allowed that exact
plan). Commands are argument lists, never shell strings.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from tools.errors import CommandError, NotAllowedError
from tools.models.ids import ActionType

__all__ = [
    "Reversibility",
    "ResourceKind",
    "Platform",
    "ActionFacts",
    "Plan",
    "Authorization",
    "CommandRunner",
    "ExecutionResult",
    "VerifyResult",
    "Action",
    "WARDEN_PREFIX",
]

Reversibility = Literal["read_only", "reversible", "irreversible"]
ResourceKind = Literal["node", "job", "pod"]
Platform = Literal["slurm", "kubernetes", "notify"]
WARDEN_PREFIX = "warden:"
"""Prefix of every drain reason Warden writes; resume_node only undoes drains carrying it."""


class ActionFacts(BaseModel):
    """What an action is, declared once on its class; the policy tables, the blast radius, the fleet
    bounds and the approval rules are derived from these (never from lists of action names)."""

    model_config = ConfigDict(frozen=True)

    reversibility: Reversibility
    resource: ResourceKind
    """What the action targets: a node, a job or a pod (the Cedar resource type)."""
    platform: Platform
    """What it acts through: Slurm commands, the Kubernetes API, or a notification channel."""
    key_params: tuple[str, ...]
    """The parameters naming its target (``node``; ``job``; ``namespace``, ``pod``)."""
    kills_jobs: bool = False
    """Ends running work (its GPU-hours count as killed)."""
    takes_out_of_service: bool = False
    """Drains or cordons a node (counted by the fleet bounds per node group and window)."""
    returns_to_service: bool = False
    """Resumes or uncordons a node (only after a passing diagnostic or an operator override)."""
    touches_job: bool = False
    """Stops, holds or changes a job (counted against its owner)."""

    @property
    def disruptive(self) -> bool:
        """Changes cluster state (anything not read-only); counted by the per-hour bound."""
        return self.reversibility != "read_only"


class Plan(BaseModel):
    """What an action would do, rendered exactly; hashing it binds approvals to it."""

    model_config = ConfigDict(frozen=True)

    action: ActionType
    params: dict[str, str | int | list[str] | None]
    commands: list[list[str]]
    reversibility: Reversibility
    description: str
    plan_hash: str


class Authorization(BaseModel):
    """Proof that the policy engine allowed one exact plan (built by the agent from a decision)."""

    plan_hash: str
    decision: Literal["allow", "needs_approval", "deny"]
    policy_ids: list[str] = Field(default_factory=list)
    approval_id: str | None = None


class CommandRunner(Protocol):
    """Runs an argument list and returns its stdout (LocalSource and SSHSource implement this)."""

    def run(self, argv: Sequence[str], *, timeout_s: float = 30.0, input_bytes: bytes | None = None) -> bytes:
        """Run ``argv``; raise CommandError on failure."""
        ...


class ExecutionResult(BaseModel):
    """What execute() did: each command with its outcome."""

    plan_hash: str
    commands: list[list[str]]
    outputs: list[str]
    ok: bool
    error: str | None = None


class VerifyResult(BaseModel):
    """Whether the expected state change is visible on the cluster."""

    ok: bool
    observed: str
    """What was read back, e.g. ``State=IDLE+DRAIN Reason=warden: ...``."""


class Action(BaseModel, ABC):
    """Base of every remediation. Subclasses set ``action_type`` and implement ``_commands``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action_type: ClassVar[ActionType]
    facts: ClassVar[ActionFacts]

    def command_timeout_s(self) -> float:
        """Wall-clock limit of each command of this action, seconds (most Slurm commands answer in
        well under a second; a GPU diagnostic overrides this)."""
        return 30.0

    @abstractmethod
    def _commands(self) -> list[list[str]]:
        """The argument lists execute() runs, in order."""

    @abstractmethod
    def describe(self) -> str:
        """One line for humans: what and why."""

    def plan(self) -> Plan:
        """Render the exact commands without running anything; the hash covers type, params, commands."""
        params = self.model_dump(mode="json")
        commands = self._commands()
        canon = json.dumps({"action": self.action_type, "params": params, "commands": commands},
                           sort_keys=True, separators=(",", ":"))
        return Plan(
            action=self.action_type,
            params=params,
            commands=commands,
            reversibility=self.facts.reversibility,
            description=self.describe(),
            plan_hash=hashlib.sha256(canon.encode()).hexdigest(),
        )

    def authorize(self, auth: Authorization) -> Plan:
        """Return this action's plan if ``auth`` allows exactly it.

        Raises:
            NotAllowedError: the decision is not ``allow`` or names another plan hash.
        """
        plan = self.plan()
        if auth.decision != "allow" or auth.plan_hash != plan.plan_hash:
            raise NotAllowedError(
                f"{self.action_type}: refusing to execute; authorization is {auth.decision!r} for plan "
                f"{auth.plan_hash[:12]}, this plan is {plan.plan_hash[:12]}"
            )
        return plan

    def execute(self, auth: Authorization, runner: CommandRunner) -> ExecutionResult:
        """Run the plan's commands with ``runner``.

        Raises:
            NotAllowedError: ``auth`` is not an ``allow`` for exactly this plan's hash.
        """
        plan = self.authorize(auth)
        outputs: list[str] = []
        for argv in plan.commands:
            try:
                outputs.append(runner.run(argv, timeout_s=self.command_timeout_s()).decode("utf-8", "replace"))
            except CommandError as e:
                return ExecutionResult(plan_hash=plan.plan_hash, commands=plan.commands, outputs=outputs,
                                       ok=False, error=str(e))
        return ExecutionResult(plan_hash=plan.plan_hash, commands=plan.commands, outputs=outputs, ok=True)

    def already_done(self, plan: Plan, why: str) -> ExecutionResult:
        """The result of an authorized execution that found the cluster already in the wanted state
        and ran nothing (what makes running an action twice harmless)."""
        return ExecutionResult(plan_hash=plan.plan_hash, commands=[], outputs=[f"{why}; nothing to do"], ok=True)

    def verify(self, runner: CommandRunner) -> VerifyResult:
        """Read back the expected state change. Default: nothing observable to check."""
        return VerifyResult(ok=True, observed="no state change to verify")
