"""The `warden` command: the composition root, one typer command per module, imported on first use.

To add a command: write ``agent/cli/<name>.py`` with a command function (or a typer.Typer for a
group) and add one :class:`~agent.cli.lazy.LazyCommand` line to ``COMMANDS``.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from agent.cli.lazy import LazyCommand, LazyGroup

__all__ = ["app", "main", "COMMANDS", "version"]

_FIND, _ACT, _SETUP = "Diagnose", "Act (policy, approval, audit)", "Set up and check"
_FRONT = "Front ends (Slack, alerts, sweeps)"

COMMANDS: tuple[LazyCommand, ...] = (
    LazyCommand("diagnose", "agent.cli.diagnose:diagnose_cmd",
                "Diagnose an incident, a snapshot or the live cluster; nothing is executed.", _FIND),
    LazyCommand("chat", "agent.cli.chat:chat_cmd",
                "Chat about an incident, a snapshot or the live cluster; approve fixes as you go.", _FIND),
    LazyCommand("runs", "agent.cli.runs:runs_app", "List past diagnoses and show one again.", _FIND),
    LazyCommand("record", "agent.cli.record:record_cmd", "Save the live cluster's evidence as a snapshot.", _FIND),
    LazyCommand("eval", "agent.cli.eval:eval_cmd", "Replay recorded incidents and score every diagnosis.", _FIND),
    LazyCommand("report", "agent.cli.report:report_cmd",
                "Write a Diagnosis as Markdown and HTML with a timeline and GPU heat maps.", _FIND),
    LazyCommand("mcp", "agent.cli.mcp:mcp_cmd", "Serve the read tools over the Model Context Protocol (stdio or HTTP).",
                _FIND),
    LazyCommand("act", "agent.cli.act:act_cmd",
                "Diagnose live and carry out the fixes through policy and approval.", _ACT),
    LazyCommand("approvals", "agent.cli.approvals:approvals_app", "List pending approvals.", _ACT),
    LazyCommand("approve", "agent.cli.approve:approve_cmd", "Approve one pending action for its exact plan.", _ACT),
    LazyCommand("deny", "agent.cli.deny:deny_cmd", "Deny one pending action, with a reason.", _ACT),
    LazyCommand("policy", "agent.cli.policy:policy_app", "Explain what the Cedar policy decides for a plan.", _ACT),
    LazyCommand("audit", "agent.cli.audit:audit_app", "Verify the tamper-evident audit log.", _ACT),
    LazyCommand("slack", "agent.cli.slack:slack_cmd",
                "Run the Slack app: questions answered in threads, plans approved by button.", _FRONT),
    LazyCommand("serve", "agent.cli.serve:serve_cmd",
                "Receive Alertmanager and generic webhooks; investigate with the matching runbook.", _FRONT),
    LazyCommand("watch", "agent.cli.watch:watch_cmd",
                "Sweep on a schedule with the deterministic engine; post only new findings.", _FRONT),
    LazyCommand("doctor", "agent.cli.doctor:doctor_cmd",
                "Check config, PATH, Slurm, Prometheus, gateway, stores and policies.", _SETUP),
    LazyCommand("config", "agent.cli.config:config_app", "Show the effective config and where each value came from.",
                _SETUP),
    LazyCommand("gateway", "agent.cli.gateway:gateway_app", "Run the LLM gateway, mint its keys, read its usage.",
                _SETUP),
    LazyCommand("sandbox", "agent.cli.sandbox:sandbox_app", "A real Slurm cluster on this host, with fault injection.",
                _SETUP),
)


class _WardenGroup(LazyGroup):
    table = COMMANDS


def version() -> str:
    """The installed Warden version (``0.1.0``), or ``unknown`` outside an install."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("warden")
    except PackageNotFoundError:
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"warden {version()}")
        raise typer.Exit()


app = typer.Typer(name="warden", cls=_WardenGroup, no_args_is_help=True, add_completion=True,
                  pretty_exceptions_enable=False, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]})


@app.callback()
def _root(
    _version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                           help="Print the version and exit.")] = False,
) -> None:
    """Warden: why GPU/HPC work is stalled or slow, with the evidence, and fixes that pass policy.

    Start with `warden diagnose evals/incidents/xid79-nccl-watchdog-other-rank` (offline, built-in model), then `warden doctor` to check this host. Every command has --help with an example.

    Example: warden diagnose evals/incidents/xid79-nccl-watchdog-other-rank
    """


def main() -> None:
    """Console-script entry point."""
    os.environ.setdefault("PYDANTIC_AI_NO_BANNER", "1")  # also for child processes; agent.diagnose turns it off too
    # Warden uses no pydantic plugins; looking for them scans every installed distribution's entry
    # points at the first model (~0.1 s). PYDANTIC_DISABLE_PLUGINS="" in the environment turns them back on.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from agent.cli.startup import exit_process, short_lived

    short_lived()
    try:
        app()
    except SystemExit as e:  # every run ends here (agent.cli.lazy): exit without the interpreter's teardown
        exit_process(e.code)


if __name__ == "__main__":
    main()
