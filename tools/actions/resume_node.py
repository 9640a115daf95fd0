"""resume_node: undo a drain — only one that Warden itself wrote."""

from __future__ import annotations

from typing import ClassVar

from tools.actions.base import (WARDEN_PREFIX, Action, ActionFacts, Authorization, CommandRunner, ExecutionResult,
                                VerifyResult)
from tools.actions.params import NodeName
from tools.actions.slurm_state import read_node
from tools.errors import ActionError
from tools.models.ids import ActionType

__all__ = ["ResumeNode"]


class ResumeNode(Action):
    """`scontrol update NodeName=<node> State=RESUME`, refused unless the drain reason starts with ``warden:``."""

    action_type: ClassVar[ActionType] = "resume_node"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="reversible", resource="node", platform="slurm",
                                               key_params=("node",), returns_to_service=True)
    node: NodeName

    def _commands(self) -> list[list[str]]:
        return [["scontrol", "update", f"NodeName={self.node}", "State=RESUME"]]

    def describe(self) -> str:
        return f"resume {self.node} (only if Warden drained it)"

    def execute(self, auth: Authorization, runner: CommandRunner) -> ExecutionResult:
        """Check the drain is Warden's, then resume.

        Raises:
            ActionError: the node is drained by someone else (reason without Warden's prefix).
        """
        plan = self.authorize(auth)
        n = read_node(runner, self.node)
        if n.drained and not (n.reason or "").startswith(WARDEN_PREFIX):
            raise ActionError(f"resume_node {self.node}: drained by someone else (Reason={n.reason}); not resuming")
        if not n.drained:
            return ExecutionResult(plan_hash=plan.plan_hash, commands=[], outputs=["not drained; nothing to do"], ok=True)
        return super().execute(auth, runner)

    def verify(self, runner: CommandRunner) -> VerifyResult:
        """The node no longer carries DRAIN."""
        n = read_node(runner, self.node)
        return VerifyResult(ok=not n.drained, observed=f"State={'+'.join([n.state or '?', *n.flags])} Reason={n.reason}")
