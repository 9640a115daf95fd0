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
from tools.models.ids import IRREVERSIBLE_ACTIONS, READ_ONLY_ACTIONS, ActionType

__all__ = [
    "Reversibility",
    "Plan",
    "Authorization",
    "CommandRunner",
    "ExecutionResult",
    "VerifyResult",
    "Action",
    "WARDEN_PREFIX",
    "reversibility_of",
]

Reversibility = Literal["read_only", "reversible", "irreversible"]
WARDEN_PREFIX = "warden:"
"""Prefix of every drain reason Warden writes; resume_node only undoes drains carrying it."""


def reversibility_of(action_type: str) -> Reversibility:
    """Classify an action type per DESIGN.md's Actions section."""
    if action_type in READ_ONLY_ACTIONS:
        return "read_only"
    if action_type in IRREVERSIBLE_ACTIONS:
        return "irreversible"
    return "reversible"


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
            reversibility=reversibility_of(self.action_type),
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
                outputs.append(runner.run(argv).decode("utf-8", "replace"))
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
