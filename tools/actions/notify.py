"""notify_owner: tell a job's (or pod's) owner what happened, through a channel that confirms it.

The agent resolves the owner before planning (Slurm's job user, or the owner label of the pod's
namespace, looked up in ``[notify.directory]``) and drafts the message (what happened to the job,
the evidence, what Warden did or proposes, the checkpoint to resume from); the plan names the
channel and recipient and hashes the text. ``execute`` sends it through :class:`Channels`;
``verify`` is the channel's acceptance. A plan without a recipient cannot execute: a missing
mapping is an error naming the user, never a silent no-op.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import PrivateAttr

from tools.actions.base import Action, ActionFacts, Authorization, ExecutionResult, VerifyResult
from tools.actions.notify_channels import ChannelKind, Channels, Delivery
from tools.actions.params import JobId, K8sName, NodeName
from tools.errors import ActionError
from tools.models.ids import ActionType

__all__ = ["NotifyOwner"]


class NotifyOwner(Action):
    """Send the owner one message (Slack DM, e-mail or webhook); read-only for the cluster."""

    action_type: ClassVar[ActionType] = "notify_owner"
    facts: ClassVar[ActionFacts] = ActionFacts(reversibility="read_only", resource="job", platform="notify",
                                               key_params=("job", "user", "namespace", "pod", "node"))
    job: JobId | None = None
    user: str | None = None
    """The owner as the site directory knows them (Slurm user, or a namespace's owner label)."""
    pod: K8sName | None = None
    namespace: K8sName | None = None
    node: NodeName | None = None
    """A node or service host (an OSS, slurmctld's host) whose owning team is told (``[notify] node_owners``)."""
    message: str
    channel: ChannelKind | None = None
    recipient: str | None = None
    """Slack user id, e-mail address, or the owner's name for the webhook; None until resolved."""
    _delivery: Delivery | None = PrivateAttr(default=None)

    def _who(self) -> str:
        if self.job:
            return f"owner of job {self.job}" + (f" ({self.user})" if self.user else "")
        if self.pod:
            return f"owner of pod {self.namespace or 'default'}/{self.pod}" + (f" ({self.user})" if self.user else "")
        if self.node:
            return f"owner of {self.node}" + (f" ({self.user})" if self.user else "")
        return f"user {self.user}"

    def subject(self) -> str:
        """The e-mail subject line (first line of the message, at most 120 chars)."""
        return (self.message.splitlines() or ["Warden"])[0][:120]

    def _commands(self) -> list[list[str]]:
        if not (self.channel and self.recipient):
            return []
        if self.channel == "slack":
            return [["slack", "chat.postMessage", f"channel=<DM of {self.recipient}>"]]
        if self.channel == "email":
            return [["smtp", "send", f"to={self.recipient}", f"subject={self.subject()}"]]
        return [["webhook", "POST", f"owner={self.recipient}"]]

    def describe(self) -> str:
        via = f" by {self.channel} to {self.recipient}" if self.channel and self.recipient else ""
        first = (self.message.splitlines() or [""])[0]
        return f"notify {self._who()}{via}: {first[:160]}"

    def execute(self, auth: Authorization, runner: Channels) -> ExecutionResult:  # type: ignore[override]
        """Send the message through ``runner`` (the configured Channels).

        Raises:
            NotAllowedError: ``auth`` does not allow exactly this plan.
            ActionError: no recipient was resolved (the site directory has no contact for the owner).
        """
        plan = self.authorize(auth)
        if not (self.channel and self.recipient):
            raise ActionError(f"notify_owner: no contact for {self._who()} in [notify.directory]; nothing sent")
        self._delivery = runner.send(self.channel, self.recipient, self.subject(), self.message)
        d = self._delivery
        return ExecutionResult(plan_hash=plan.plan_hash, commands=plan.commands, outputs=[f"{d.channel}: {d.detail}"],
                               ok=d.accepted, error=None if d.accepted else f"{d.channel} did not accept: {d.detail}")

    def verify(self, runner: Channels) -> VerifyResult:  # type: ignore[override]
        """The channel accepted the message (Slack ok+ts, SMTP no refused recipient, webhook 2xx)."""
        d = self._delivery
        if d is None:
            return VerifyResult(ok=False, observed="not sent")
        return VerifyResult(ok=d.accepted, observed=f"{d.channel} to {d.recipient}: {d.detail}")
