"""Recognising a Slurm client's error output in place of its normal output.

When slurmctld (or slurmdbd) cannot be reached, or the client cannot read slurm.conf (``squeue: error: Parse
error in file /etc/slurm/slurm.conf line 131``, ``fatal: Unable to process configuration file``),
squeue/sinfo/scontrol/sacct/sdiag print an error line and exit non-zero; a recording of that is evidence,
not a malformed file.
"""

from __future__ import annotations

import re

from tools.models.slurm import SlurmClientError

__all__ = ["SLURM_FORMATS", "client_error"]

SLURM_FORMATS = frozenset({
    "squeue-json", "squeue-text", "sinfo-json", "sinfo-text", "sinfo-reasons-text", "scontrol-job-text",
    "scontrol-node-text", "sacct-json", "sacct-text", "sdiag-text", "sacctmgr-qos-text",
})

_ERROR_LINE = re.compile(
    r"^(?:slurm_\w+(?: error)?|squeue|sinfo|scontrol|sacctmgr|sacct|sdiag|sshare|sprio)(?:: error)?:\s*"
    r"(?P<msg>.*(?:Unable to contact slurm controller|Socket timed out|Connection refused|Zero Bytes were "
    r"transmitted|Communication connection failure|Problem talking to the database|Unable to establish "
    r"connection|slurm_persist_conn_open|Invalid user|Protocol authentication error|"
    r"Insane message length|Invalid job id specified|Invalid node name specified|Parse error in file|"
    r"Unable to process configuration file).*)$",
    re.IGNORECASE,
)


def client_error(text: str, *, path: str, format: str) -> SlurmClientError | None:
    """A SlurmClientError when every non-blank line of ``text`` is Slurm client error output and at
    least one names a communication failure; None for ordinary output."""
    if len(text) > 20 * 4096:  # error output is a few short lines; real output is never read twice
        return None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines or len(lines) > 20:
        return None
    if not any(_ERROR_LINE.match(ln) for ln in lines):
        return None
    if not all(re.match(r"^(?:slurm_\w+|squeue|sinfo|scontrol|sacctmgr|sacct|sdiag|sshare|sprio|srun|sbatch)\b", ln)
               for ln in lines):
        return None
    return SlurmClientError(path=path, format=format, message=" | ".join(lines)[:500])
