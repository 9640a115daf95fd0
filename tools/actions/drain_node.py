"""drain_node: stop new work landing on a node (reversible with resume_node)."""

from __future__ import annotations

from typing import ClassVar

from tools.actions.base import WARDEN_PREFIX, Action, CommandRunner, VerifyResult
from tools.actions.params import NodeName
from tools.actions.slurm_state import read_node
from tools.models.ids import ActionType

__all__ = ["DrainNode"]


class DrainNode(Action):
    """`scontrol update NodeName=<node> State=DRAIN Reason="warden: <reason>"`.

    Running jobs finish; no new ones start. The reason carries Warden's prefix so that
    resume_node later undoes only Warden's own drains.
    """

    action_type: ClassVar[ActionType] = "drain_node"
    node: NodeName
    reason: str

    def _full_reason(self) -> str:
        text = " ".join(self.reason.split())
        return text if text.startswith(WARDEN_PREFIX) else f"{WARDEN_PREFIX} {text}"

    def _commands(self) -> list[list[str]]:
        return [["scontrol", "update", f"NodeName={self.node}", "State=DRAIN", f"Reason={self._full_reason()}"]]

    def describe(self) -> str:
        return f"drain {self.node}: {self._full_reason()}"

    def verify(self, runner: CommandRunner) -> VerifyResult:
        """The node carries DRAIN and Warden's reason."""
        n = read_node(runner, self.node)
        ok = n.drained and (n.reason or "").startswith(WARDEN_PREFIX)
        return VerifyResult(ok=ok, observed=f"State={'+'.join([n.state or '?', *n.flags])} Reason={n.reason}")
