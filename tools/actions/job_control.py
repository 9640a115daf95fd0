"""Single-command job actions: hold_job, release_job, requeue_job, cancel_job, update_job."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from tools.actions.base import Action, ActionFacts, Authorization, CommandRunner, ExecutionResult, VerifyResult
from tools.actions.params import JobId
from tools.actions.slurm_state import read_job, read_job_settled
from tools.models.ids import ActionType

__all__ = ["HoldJob", "ReleaseJob", "RequeueJob", "CancelJob", "UpdateJob"]

_ENDED = {"CANCELLED", "COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
          "PREEMPTED"}


class HoldJob(Action):
    """`scontrol hold <job>`: keep a pending job from starting (reversible with release_job)."""

    action_type: ClassVar[ActionType] = "hold_job"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="reversible", resource="job", platform="slurm",
                                               key_params=("job",), touches_job=True)
    job: JobId

    def _commands(self) -> list[list[str]]:
        return [["scontrol", "hold", self.job]]

    def describe(self) -> str:
        return f"hold pending job {self.job}"

    def execute(self, auth: Authorization, runner: CommandRunner) -> ExecutionResult:
        """Hold, unless the job is held already (then nothing runs)."""
        plan = self.authorize(auth)
        j = read_job(runner, self.job)
        if j is not None and "held" in (j.reason or "").lower():
            return self.already_done(plan, f"job {self.job} is already held (Reason={j.reason})")
        return super().execute(auth, runner)

    def verify(self, runner: CommandRunner) -> VerifyResult:
        """The job is pending with a held reason (priority 0)."""
        j = read_job(runner, self.job)
        ok = j is not None and j.state == "PENDING" and "held" in (j.reason or "").lower()
        return VerifyResult(ok=ok, observed=f"JobState={j.state if j else 'gone'} Reason={j.reason if j else ''}")


class ReleaseJob(Action):
    """`scontrol release <job>`: let a held job be scheduled again."""

    action_type: ClassVar[ActionType] = "release_job"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="reversible", resource="job", platform="slurm",
                                               key_params=("job",), touches_job=True)
    job: JobId

    def _commands(self) -> list[list[str]]:
        return [["scontrol", "release", self.job]]

    def describe(self) -> str:
        return f"release held job {self.job}"

    def execute(self, auth: Authorization, runner: CommandRunner) -> ExecutionResult:
        """Release, unless the job is not held (then nothing runs)."""
        plan = self.authorize(auth)
        j = read_job(runner, self.job)
        if j is not None and "held" not in (j.reason or "").lower():
            return self.already_done(plan, f"job {self.job} is not held (JobState={j.state})")
        return super().execute(auth, runner)

    def verify(self, runner: CommandRunner) -> VerifyResult:
        """The job is no longer held."""
        j = read_job(runner, self.job)
        ok = j is not None and "held" not in (j.reason or "").lower()
        return VerifyResult(ok=ok, observed=f"JobState={j.state if j else 'gone'} Reason={j.reason if j else ''}")


class RequeueJob(Action):
    """`scontrol requeue <job>`: put a running or failed batch job back in the queue (work since its
    last checkpoint is lost)."""

    action_type: ClassVar[ActionType] = "requeue_job"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="irreversible", resource="job", platform="slurm",
                                               key_params=("job",), touches_job=True, kills_jobs=True)
    job: JobId

    def _commands(self) -> list[list[str]]:
        return [["scontrol", "requeue", self.job]]

    def describe(self) -> str:
        return f"requeue job {self.job}"

    def execute(self, auth: Authorization, runner: CommandRunner) -> ExecutionResult:
        """Requeue, unless the job is already pending again (a second requeue would kill its restart)."""
        plan = self.authorize(auth)
        j = read_job(runner, self.job)
        if j is not None and j.state in ("PENDING", "REQUEUED"):
            return self.already_done(plan, f"job {self.job} is already requeued (JobState={j.state})")
        return super().execute(auth, runner)

    def verify(self, runner: CommandRunner) -> VerifyResult:
        """The job is pending again (or already restarted), once its old run finished COMPLETING."""
        j = read_job_settled(runner, self.job)
        ok = j is not None and j.state in ("PENDING", "REQUEUED", "RUNNING", "CONFIGURING")
        return VerifyResult(ok=ok, observed=f"JobState={j.state if j else 'gone'}")


class CancelJob(Action):
    """`scancel <job>`: end a job for good."""

    action_type: ClassVar[ActionType] = "cancel_job"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="irreversible", resource="job", platform="slurm",
                                               key_params=("job",), touches_job=True, kills_jobs=True)
    job: JobId

    def _commands(self) -> list[list[str]]:
        return [["scancel", self.job]]

    def describe(self) -> str:
        return f"cancel job {self.job}"

    def execute(self, auth: Authorization, runner: CommandRunner) -> ExecutionResult:
        """Cancel, unless the job has already ended or is gone (then nothing runs)."""
        plan = self.authorize(auth)
        j = read_job(runner, self.job)
        if j is None or (j.state or "") in _ENDED:
            return self.already_done(plan, f"job {self.job} already ended (JobState={j.state if j else 'gone'})")
        return super().execute(auth, runner)

    def verify(self, runner: CommandRunner) -> VerifyResult:
        """The job is gone or in CANCELLED."""
        j = read_job(runner, self.job)
        ok = j is None or (j.state or "") in _ENDED
        return VerifyResult(ok=ok, observed=f"JobState={j.state if j else 'gone'}")


class UpdateJob(Action):
    """`scontrol update JobId=<job> [TimeLimit=<min>] [NumNodes=<n>] [StartTime=now|<ISO time>]` on a pending
    job (StartTime is the job's begin time, what ``sbatch --begin`` set)."""

    action_type: ClassVar[ActionType] = "update_job"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="reversible", resource="job", platform="slurm",
                                               key_params=("job",), touches_job=True)
    job: JobId
    time_limit_min: int | None = Field(default=None, ge=1)
    num_nodes: int | None = Field(default=None, ge=1)
    start_time: str | None = Field(default=None, pattern=r"^(now|\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?)$")

    def _commands(self) -> list[list[str]]:
        argv = ["scontrol", "update", f"JobId={self.job}"]
        if self.start_time is not None:
            argv.append(f"StartTime={self.start_time}")
        if self.time_limit_min is not None:
            argv.append(f"TimeLimit={self.time_limit_min}")
        if self.num_nodes is not None:
            argv.append(f"NumNodes={self.num_nodes}")
        return [argv] if len(argv) > 3 else []

    def describe(self) -> str:
        parts = [f"TimeLimit={self.time_limit_min} min" if self.time_limit_min else "",
                 f"NumNodes={self.num_nodes}" if self.num_nodes else "",
                 f"StartTime={self.start_time}" if self.start_time else ""]
        what = ", ".join(p for p in parts if p) or "parameters to be chosen by the owner"
        return f"update pending job {self.job}: {what}"

    def verify(self, runner: CommandRunner) -> VerifyResult:
        """The job shows the new limit / node count."""
        j = read_job(runner, self.job)
        if j is None:
            return VerifyResult(ok=False, observed="job gone")
        ok = (self.time_limit_min is None or j.time_limit_s == self.time_limit_min * 60) and (
            self.num_nodes is None or j.num_nodes == self.num_nodes) and (
            self.start_time is None or (j.reason or "") != "BeginTime" or self.start_time != "now")
        return VerifyResult(ok=ok, observed=f"TimeLimit={j.time_limit_s}s NumNodes={j.num_nodes} Reason={j.reason}")
