"""resubmit_from_checkpoint and resize_job: a new job from the old one's batch script."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from tools.actions.base import Action
from tools.models.ids import ActionType

__all__ = ["ResubmitFromCheckpoint", "ResizeJob"]


def _script(job: str) -> str:
    return f"warden-resubmit-{job}.sbatch"


class ResubmitFromCheckpoint(Action):
    """Resubmit a job's own batch script, resuming from its newest verified checkpoint, excluding
    suspect nodes:

        scontrol write batch_script <job> <file>
        sbatch --exclude=<nodes> --export=ALL,WARDEN_RESUME_FROM=<checkpoint> <file>

    The checkpoint is passed in the environment; a job script that honours it resumes there.
    """

    action_type: ClassVar[ActionType] = "resubmit_from_checkpoint"
    job: str
    exclude_nodes: list[str] = Field(default_factory=list)
    checkpoint: str | None = None

    def _commands(self) -> list[list[str]]:
        script = _script(self.job)
        sbatch = ["sbatch", "--parsable"]
        if self.exclude_nodes:
            sbatch.append(f"--exclude={','.join(sorted(self.exclude_nodes))}")
        if self.checkpoint:
            sbatch.append(f"--export=ALL,WARDEN_RESUME_FROM={self.checkpoint}")
        return [["scontrol", "write", "batch_script", self.job, script], [*sbatch, script]]

    def describe(self) -> str:
        where = f" from {self.checkpoint}" if self.checkpoint else " from its newest checkpoint"
        excl = f", excluding {', '.join(sorted(self.exclude_nodes))}" if self.exclude_nodes else ""
        return f"resubmit job {self.job}{where}{excl}"


class ResizeJob(Action):
    """Resubmit a job's batch script with another node count (`sbatch --nodes=<n>`)."""

    action_type: ClassVar[ActionType] = "resize_job"
    job: str
    num_nodes: int = Field(ge=1)
    exclude_nodes: list[str] = Field(default_factory=list)
    checkpoint: str | None = None

    def _commands(self) -> list[list[str]]:
        script = _script(self.job)
        sbatch = ["sbatch", "--parsable", f"--nodes={self.num_nodes}"]
        if self.exclude_nodes:
            sbatch.append(f"--exclude={','.join(sorted(self.exclude_nodes))}")
        if self.checkpoint:
            sbatch.append(f"--export=ALL,WARDEN_RESUME_FROM={self.checkpoint}")
        return [["scontrol", "write", "batch_script", self.job, script], [*sbatch, script]]

    def describe(self) -> str:
        return f"resubmit job {self.job} on {self.num_nodes} node(s)"
