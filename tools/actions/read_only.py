"""Read-only actions: run_gpu_diagnostic and notify_owner."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from tools.actions.base import Action
from tools.actions.params import JobId, K8sName, NodeName
from tools.models.ids import ActionType

__all__ = ["RunGpuDiagnostic", "NotifyOwner"]


class RunGpuDiagnostic(Action):
    """`dcgmi diag -r <level>` on the node, through srun so Slurm accounts for it."""

    action_type: ClassVar[ActionType] = "run_gpu_diagnostic"
    node: NodeName
    level: int = Field(default=2, ge=1, le=4)

    def _commands(self) -> list[list[str]]:
        return [["srun", f"--nodelist={self.node}", "--nodes=1", "--ntasks=1", "--exclusive",
                 "dcgmi", "diag", "-r", str(self.level)]]

    def describe(self) -> str:
        return f"run DCGM diagnostic level {self.level} on {self.node}"


class NotifyOwner(Action):
    """Tell the job's owner what happened and what to change; sends no cluster command."""

    action_type: ClassVar[ActionType] = "notify_owner"
    job: JobId | None = None
    user: str | None = None
    pod: K8sName | None = None
    namespace: K8sName | None = None
    message: str

    def _commands(self) -> list[list[str]]:
        return []

    def describe(self) -> str:
        if self.job:
            who = f"owner of job {self.job}"
        elif self.pod:
            who = f"owner of pod {self.namespace or 'default'}/{self.pod}"
        else:
            who = f"user {self.user}"
        return f"notify {who}: {self.message}"
