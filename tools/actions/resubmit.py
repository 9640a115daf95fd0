"""resubmit_from_checkpoint and resize_job: a new job from the old one's batch script.

Both write the old job's batch script with ``scontrol write batch_script`` to a file named after the
job (relative to the runner's working directory, which Warden points at a folder it may write) and
``sbatch --parsable`` it. A job that belongs to someone other than Warden's Slurm identity is
resubmitted as its owner (``as_user``: ``--uid`` with the owner's login environment, which only
root may ask for), never as Warden: the owner's script must not run with Warden's identity, nor
with Warden's environment (``--export=ALL`` would hand it Warden's secrets). Executing is idempotent: when a job submitted from that script is
already pending or running, nothing is submitted again. ``verify`` reads the new job back (its id
from ``sbatch --parsable``, else found by its script) and checks it is queued or running with the
suspect nodes excluded.
"""

from __future__ import annotations

import posixpath
from typing import ClassVar

from pydantic import Field, PrivateAttr

from tools.actions.base import Action, ActionFacts, Authorization, CommandRunner, ExecutionResult, VerifyResult
from tools.actions.params import CheckpointPath, JobId, NodeName, UserName
from tools.actions.slurm_state import read_job
from tools.errors import CommandError
from tools.models.ids import ActionType

__all__ = ["ResubmitFromCheckpoint", "ResizeJob"]

_ALIVE = ("PENDING", "RUNNING", "CONFIGURING", "REQUEUED", "RESIZING", "SUSPENDED")


def _script(job: str) -> str:
    return f"warden-resubmit-{job}.sbatch"


class _Resubmit(Action):
    """Shared execute/verify of the two resubmitting actions."""

    job: JobId
    exclude_nodes: list[NodeName] = Field(default_factory=list)
    checkpoint: CheckpointPath | None = None
    as_user: UserName | None = None
    """Submit as this user (the job's owner, when it is not Warden's Slurm identity; needs root)."""
    _new_job: str | None = PrivateAttr(default=None)

    def _sbatch(self, *head: str) -> list[str]:
        """``sbatch --parsable`` with ``head``, the exclusions and the checkpoint; as the owner when
        ``as_user``: ``--uid`` and the owner's login environment, never Warden's."""
        argv = ["sbatch", "--parsable", *head]
        if self.exclude_nodes:
            argv.append(f"--exclude={','.join(sorted(self.exclude_nodes))}")
        if self.as_user:
            argv += [f"--uid={self.as_user}", "--get-user-env"]
            # only the named variable: Warden's own environment never reaches the owner's job
            argv.append(f"--export=WARDEN_RESUME_FROM={self.checkpoint}" if self.checkpoint else "--export=NONE")
        elif self.checkpoint:
            argv.append(f"--export=ALL,WARDEN_RESUME_FROM={self.checkpoint}")
        return argv

    @property
    def new_job(self) -> str | None:
        """The id of the job this action submitted (or found already submitted), once executed."""
        return self._new_job

    def _queued_from_script(self, runner: CommandRunner) -> str | None:
        """A pending/running job whose batch script is this action's script file, if any."""
        try:
            out = runner.run(["squeue", "-h", "-o", "%i|%T|%o"]).decode("utf-8", "replace")
        except CommandError:
            return None
        for line in out.splitlines():
            parts = line.strip().split("|", 2)
            if len(parts) == 3 and parts[1] in _ALIVE and posixpath.basename(parts[2]) == _script(self.job):
                return parts[0]
        return None

    def execute(self, auth: Authorization, runner: CommandRunner) -> ExecutionResult:
        """Submit once: when a job from this script is already queued or running, report it and submit nothing.

        Raises:
            NotAllowedError: ``auth`` is not an ``allow`` for exactly this plan's hash.
        """
        plan = self.authorize(auth)
        already = self._queued_from_script(runner)
        if already:
            self._new_job = already
            return ExecutionResult(plan_hash=plan.plan_hash, commands=[], ok=True,
                                   outputs=[f"job {already} from {_script(self.job)} is already queued; nothing submitted"])
        outputs: list[str] = []
        for i, argv in enumerate(plan.commands):
            try:
                outputs.append(runner.run(argv).decode("utf-8", "replace"))
            except CommandError as e:
                return ExecutionResult(plan_hash=plan.plan_hash, commands=plan.commands, outputs=outputs, ok=False,
                                       error=str(e))
            if i == 0 and "written to" not in outputs[0]:
                # scontrol 22.05 exits 0 and prints "job script retrieval failed: Invalid job id specified"
                # on stderr when slurmctld no longer holds the job (MinJobAge passed): nothing was written.
                return ExecutionResult(plan_hash=plan.plan_hash, commands=plan.commands, outputs=outputs, ok=False,
                                       error=f"scontrol write batch_script {self.job} wrote no script (slurmctld no "
                                       "longer holds this job's batch script)")
        self._new_job = outputs[-1].strip().split(";")[0] or None if outputs else None
        return ExecutionResult(plan_hash=plan.plan_hash, commands=plan.commands, outputs=outputs, ok=True)

    def verify(self, runner: CommandRunner) -> VerifyResult:
        """The new job is queued or running, with the excluded nodes in its ExcNodeList."""
        new = self._new_job or self._queued_from_script(runner)
        if not new:
            return VerifyResult(ok=False, observed=f"no job submitted from {_script(self.job)} is queued or running")
        j = read_job(runner, new)
        if j is None:
            return VerifyResult(ok=False, observed=f"new job {new} is unknown to Slurm")
        missing = sorted(set(self.exclude_nodes) - set(j.exc_nodes))
        ok = (j.state or "") in _ALIVE + ("COMPLETED",) and not missing
        return VerifyResult(ok=ok, observed=f"new job {new} JobState={j.state} ExcNodeList={','.join(j.exc_nodes) or '(null)'}"
                            + (f" (not excluded: {', '.join(missing)})" if missing else ""))


class ResubmitFromCheckpoint(_Resubmit):
    """Resubmit a job's own batch script, resuming from its newest verified checkpoint, excluding
    suspect nodes:

        scontrol write batch_script <job> <file>
        sbatch --parsable --exclude=<nodes> --export=ALL,WARDEN_RESUME_FROM=<checkpoint> <file>

    The checkpoint is passed in the environment; a job script that honours it resumes there.
    """

    action_type: ClassVar[ActionType] = "resubmit_from_checkpoint"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="irreversible", resource="job", platform="slurm",
                                               key_params=("job",), touches_job=True)

    def _commands(self) -> list[list[str]]:
        script = _script(self.job)
        return [["scontrol", "write", "batch_script", self.job, script], [*self._sbatch(), script]]

    def describe(self) -> str:
        where = f" from {self.checkpoint}" if self.checkpoint else " from its newest checkpoint"
        excl = f", excluding {', '.join(sorted(self.exclude_nodes))}" if self.exclude_nodes else ""
        return f"resubmit job {self.job}{where}{excl}"


class ResizeJob(_Resubmit):
    """Resubmit a job's batch script with another node count (`sbatch --nodes=<n>`)."""

    action_type: ClassVar[ActionType] = "resize_job"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="irreversible", resource="job", platform="slurm",
                                               key_params=("job",), touches_job=True)
    num_nodes: int = Field(ge=1)

    def _commands(self) -> list[list[str]]:
        script = _script(self.job)
        return [["scontrol", "write", "batch_script", self.job, script], [*self._sbatch(f"--nodes={self.num_nodes}"), script]]

    def describe(self) -> str:
        return f"resubmit job {self.job} on {self.num_nodes} node(s)"

    def verify(self, runner: CommandRunner) -> VerifyResult:
        """As resubmit, and the new job asks for ``num_nodes`` nodes."""
        base = super().verify(runner)
        new = self._new_job or self._queued_from_script(runner)
        j = read_job(runner, new) if new else None
        if j is None or not base.ok:
            return base
        ok = j.num_nodes == self.num_nodes
        return VerifyResult(ok=ok, observed=f"{base.observed} NumNodes={j.num_nodes}")
