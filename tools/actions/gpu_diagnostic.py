"""run_gpu_diagnostic: DCGM's diagnostic on one node, through Slurm, its JSON kept as evidence.

    srun --job-name=warden-dcgm-diag --nodelist=<node> --nodes=1 --ntasks=1 --exclusive --time=<min>
         [--reservation=<r>] dcgmi diag -r <level> -j

Level 1 takes seconds, level 2 a few minutes, level 3 tens of minutes and level 4 over an hour
(NVIDIA's DCGM diagnostics guide), so the command's timeout and the job's ``--time`` follow the
level. The step can only start where Slurm may place a job: before the node is drained, or — for a node
Warden drained — inside a maintenance reservation (``reservation``). Slurm starts no job on a
DRAIN node even inside a MAINT reservation (checked in the sandbox), so then the plan is::

    scontrol create reservation ReservationName=<r> Nodes=<node> StartTime=now Duration=<min>
             Users=<user> Flags=MAINT,IGNORE_JOBS        # only <user>'s steps may start there
    scontrol update NodeName=<node> State=RESUME         # the reservation, not the drain, holds it
    srun --reservation=<r> ... dcgmi diag -r <level> -j
    scontrol update NodeName=<node> State=DRAIN Reason=<Warden's drain reason, unchanged>
    scontrol delete ReservationName=<r>

and the last two run whatever the diagnostic did. The printed JSON (format
``dcgmi-diag-json``) is parsed into a :class:`DcgmDiagReport`; a failing result is evidence for the
node and keeps it out of service (resume_node needs a passing diagnostic).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, PrivateAttr, StringConstraints
from typing_extensions import Annotated

from tools.actions.base import Action, ActionFacts, Authorization, CommandRunner, ExecutionResult, Plan, VerifyResult
from tools.actions.params import NodeName
from tools.errors import CommandError, ParseError
from tools.models.dcgm_diag import DcgmDiagReport
from tools.models.findings import Evidence
from tools.models.ids import ActionType
from tools.parsers.gpu.dcgmi_diag_json import parse_dcgmi_diag_json

__all__ = ["RunGpuDiagnostic", "DIAG_TIMEOUT_S", "DIAG_JOB_NAME"]

DIAG_JOB_NAME = "warden-dcgm-diag"
"""Slurm job name of every diagnostic step, so Warden's own (failing) diagnostic is never taken for
a user's failed job on the suspect node."""

DIAG_TIMEOUT_S: dict[int, float] = {1: 300.0, 2: 1800.0, 3: 5400.0, 4: 14400.0}
"""Wall-clock limit per `dcgmi diag -r` level, seconds: generous over DCGM's documented run
times (level 2 is minutes, level 4 is hours), so a healthy run is never cut short."""

ReservationName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]


class RunGpuDiagnostic(Action):
    """`dcgmi diag -r <level> -j` on one node as a Slurm step; the JSON result becomes evidence."""

    action_type: ClassVar[ActionType] = "run_gpu_diagnostic"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="read_only", resource="node", platform="slurm",
                                               key_params=("node",))
    node: NodeName
    level: int = Field(default=2, ge=1, le=4)
    reservation: ReservationName | None = None
    """A maintenance reservation holding the (drained) node, so the diagnostic can start there."""
    reservation_user: ReservationName | None = None
    """The Slurm user the reservation admits (the one running srun)."""
    drain_reason: str | None = None
    """Warden's drain reason on the node, written back after the diagnostic."""
    _report: DcgmDiagReport | None = PrivateAttr(default=None)
    _raw: str | None = PrivateAttr(default=None)

    def command_timeout_s(self) -> float:
        """Per level: see :data:`DIAG_TIMEOUT_S`."""
        return DIAG_TIMEOUT_S[self.level]

    def _commands(self) -> list[list[str]]:
        minutes = int(DIAG_TIMEOUT_S[self.level] // 60)
        argv = ["srun", f"--job-name={DIAG_JOB_NAME}", f"--nodelist={self.node}", "--nodes=1", "--ntasks=1",
                "--exclusive", f"--time={minutes}"]
        if not self.reservation:
            return [[*argv, "dcgmi", "diag", "-r", str(self.level), "-j"]]
        r = self.reservation
        return [["scontrol", "create", "reservation", f"ReservationName={r}", f"Nodes={self.node}", "StartTime=now",
                 f"Duration={minutes + 5}", f"Users={self.reservation_user or 'root'}", "Flags=MAINT,IGNORE_JOBS"],
                ["scontrol", "update", f"NodeName={self.node}", "State=RESUME"],
                [*argv, f"--reservation={r}", "dcgmi", "diag", "-r", str(self.level), "-j"],
                ["scontrol", "update", f"NodeName={self.node}", "State=DRAIN",
                 f"Reason={self.drain_reason or 'warden: held for a GPU diagnostic'}"],
                ["scontrol", "delete", f"ReservationName={r}"]]

    def describe(self) -> str:
        where = f" in reservation {self.reservation}" if self.reservation else ""
        return f"run DCGM diagnostic level {self.level} on {self.node}{where}"

    @property
    def report(self) -> DcgmDiagReport | None:
        """The parsed result, once executed."""
        return self._report

    @property
    def raw_json(self) -> str | None:
        """What `dcgmi diag -j` printed (format dcgmi-diag-json), once executed and parsed."""
        return self._raw

    def execute(self, auth: Authorization, runner: CommandRunner) -> ExecutionResult:
        """Run the diagnostic and parse its JSON. `dcgmi diag` exits non-zero when a test fails but
        still prints the JSON, so a failed command whose output parses is a (failing) result.

        Raises:
            NotAllowedError: ``auth`` is not an ``allow`` for exactly this plan's hash.
        """
        plan = self.authorize(auth)
        if self.reservation:
            return self._in_reservation(plan, runner)
        return self._diag(plan, plan.commands[0], runner)

    def _in_reservation(self, plan: Plan, runner: CommandRunner) -> ExecutionResult:
        create, resume, diag, redrain, delete = plan.commands
        try:
            runner.run(create)
        except CommandError as e:
            return ExecutionResult(plan_hash=plan.plan_hash, commands=plan.commands, outputs=[], ok=False, error=str(e))
        errors = []
        try:
            runner.run(resume)
            result = self._diag(plan, diag, runner)
        except CommandError as e:
            result = ExecutionResult(plan_hash=plan.plan_hash, commands=plan.commands, outputs=[], ok=False, error=str(e))
        finally:
            for argv in (redrain, delete):  # the node goes back to Warden's drain whatever happened
                try:
                    runner.run(argv)
                except CommandError as e:
                    errors.append(str(e))
        if errors:
            return result.model_copy(update={"ok": False, "error": "; ".join([result.error or "", *errors]).strip("; ")})
        return result

    def _diag(self, plan: Plan, argv: list[str], runner: CommandRunner) -> ExecutionResult:
        try:
            out = runner.run(argv, timeout_s=self.command_timeout_s()).decode("utf-8", "replace")
        except CommandError as e:
            out = e.stdout
            if not out.strip():
                return ExecutionResult(plan_hash=plan.plan_hash, commands=plan.commands, outputs=[], ok=False,
                                       error=str(e))
        try:
            self._report = parse_dcgmi_diag_json(out, path=" ".join(argv), node=self.node)[0]
            self._raw = out
        except ParseError as e:
            return ExecutionResult(plan_hash=plan.plan_hash, commands=plan.commands, outputs=[out[:2000]], ok=False,
                                   error=f"dcgmi diag printed no readable JSON: {e}")
        return ExecutionResult(plan_hash=plan.plan_hash, commands=plan.commands, outputs=[out[:20000]], ok=True)

    def verify(self, runner: CommandRunner) -> VerifyResult:
        """The diagnostic ran to a result DCGM reported (``ok``); whether the node passed is in
        ``observed`` and in :attr:`report` (a failing node is a result, not a failed action)."""
        r = self._report
        if r is None:
            return VerifyResult(ok=False, observed="no diagnostic result")
        if r.passed:
            return VerifyResult(ok=True, observed=f"dcgmi diag -r {self.level} on {self.node} PASSED: all "
                                f"{len(r.results)} results pass")
        failed = "; ".join(f"{f.test}{'' if f.gpu is None else f' GPU {f.gpu}'}: {f.status}"
                           + (f" ({f.warnings[0][:120]})" if f.warnings else "") for f in r.failures[:4])
        return VerifyResult(ok=True, observed=f"dcgmi diag -r {self.level} on {self.node} FAILED: {failed or 'no test ran'}")

    def evidence(self) -> list[Evidence]:
        """The failing results as evidence for the node (empty when it passed or never ran)."""
        if self._report is None:
            return []
        where = " ".join(next(c for c in self.plan().commands if c[0] == "srun"))
        return [Evidence(text=f"{self.node}: DCGM {f.category}/{f.test}"
                         + ("" if f.gpu is None else f" GPU {f.gpu}") + f" {f.status}"
                         + (f": {f.warnings[0][:200]}" if f.warnings else ""), file=where)
                for f in self._report.failures]
