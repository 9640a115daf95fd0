"""drain_node: stop new work landing on a node (reversible with resume_node)."""

from __future__ import annotations

from typing import ClassVar

from tools.actions.base import (WARDEN_PREFIX, Action, ActionFacts, Authorization, CommandRunner, ExecutionResult,
                                VerifyResult)
from tools.actions.params import NodeName
from tools.actions.slurm_state import read_node
from tools.errors import ActionError
from tools.models.ids import ActionType

__all__ = ["DrainNode"]


class DrainNode(Action):
    """`scontrol update NodeName=<node> State=DRAIN Reason="warden: <reason>"`.

    Running jobs finish; no new ones start. The reason carries Warden's prefix so that
    resume_node later undoes only Warden's own drains.
    """

    action_type: ClassVar[ActionType] = "drain_node"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="reversible", resource="node", platform="slurm",
                                               key_params=("node",), takes_out_of_service=True)
    node: NodeName
    reason: str

    def _full_reason(self) -> str:
        text = " ".join(self.reason.split())
        return text if text.startswith(WARDEN_PREFIX) else f"{WARDEN_PREFIX} {text}"

    def _commands(self) -> list[list[str]]:
        return [["scontrol", "update", f"NodeName={self.node}", "State=DRAIN", f"Reason={self._full_reason()}"]]

    def describe(self) -> str:
        return f"drain {self.node}: {self._full_reason()}"

    def execute(self, auth: Authorization, runner: CommandRunner) -> ExecutionResult:
        """Drain, unless the node is already drained: by Warden (nothing to do) or by someone else.

        Raises:
            NotAllowedError: ``auth`` does not allow exactly this plan.
            ActionError: the node is drained by someone else; overwriting their reason with Warden's
                would later let Warden resume a node an administrator took out.
        """
        plan = self.authorize(auth)
        n = read_node(runner, self.node)
        if n.drained and (n.reason or "").startswith(WARDEN_PREFIX):
            return ExecutionResult(plan_hash=plan.plan_hash, commands=[], ok=True,
                                   outputs=[f"{self.node} is already drained by Warden ({n.reason}); nothing to do"])
        if n.drained:
            raise ActionError(f"drain_node {self.node}: already drained by someone else (Reason={n.reason}); "
                              "not overwriting their reason")
        return super().execute(auth, runner)

    def verify(self, runner: CommandRunner) -> VerifyResult:
        """The node carries DRAIN and Warden's reason."""
        n = read_node(runner, self.node)
        ok = n.drained and (n.reason or "").startswith(WARDEN_PREFIX)
        return VerifyResult(ok=ok, observed=f"State={'+'.join([n.state or '?', *n.flags])} Reason={n.reason}")
