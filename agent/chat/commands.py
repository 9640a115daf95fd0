"""Slash commands of `warden chat`: parsed here, answered as lines of text (raw; the REPL cleans them).

    /plan [N]            the plans, or plan N's exact commands (shell-quoted), hash and approval state
    /approve N           approve plan N through the approval flow (agent.chat.approve)
    /deny N [reason]     deny it
    /evidence            the cited evidence with times and paths, and the other signals
    /help                this list
    /quit                end the session (also /exit, Ctrl-D)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.chat.approve import ChatApprovals
from agent.render.view import build_view
from tools.models.findings import Diagnosis

__all__ = ["HELP", "Command", "parse_command", "run_command"]

HELP = """Ask in plain words; the first question diagnoses, the next ones reuse its evidence, e.g.
  why not gpu005?   show the log lines   what would draining cost?   what should we do?
Commands:
  /plan [N]          the fixes, or fix N's exact commands
  /approve N         approve fix N (as your login user) and carry it out as far as this session may
  /deny N [reason]   deny fix N
  /evidence          the evidence the diagnosis cites, with times and paths
  /help              this help
  /quit              end the session (also /exit or Ctrl-D)"""


@dataclass(frozen=True)
class Command:
    """A parsed slash command."""

    name: str
    number: int | None = None
    rest: str = ""


_NEEDS_N = ("approve", "deny")
_NAMES = ("plan", "approve", "deny", "evidence", "help", "quit", "exit")


def parse_command(line: str) -> Command:
    """Parse ``/name [N] [rest]``.

    Raises:
        ValueError: an unknown command, or a missing or non-numeric N where one is needed.
    """
    words = line.strip()[1:].split(maxsplit=2)
    name = (words[0].lower() if words else "help")
    if name not in _NAMES:
        raise ValueError(f"unknown command /{name}; /help lists them")
    number = None
    rest = ""
    if len(words) > 1:
        if words[1].isdigit():
            number = int(words[1])
            rest = words[2] if len(words) > 2 else ""
        else:
            rest = " ".join(words[1:])
    if name in _NEEDS_N and number is None:
        raise ValueError(f"/{name} needs a fix number: /{name} N (see /plan)")
    if name == "plan" and rest and number is None:
        raise ValueError("/plan takes a fix number: /plan N")
    return Command(name="quit" if name == "exit" else name, number=number, rest=rest)


def _plan_lines(d: Diagnosis, n: int | None, root: Path | None, status: Callable[[str], str | None]) -> list[str]:
    view = build_view(d, root=root)
    if not view.plans:
        return [f"No fix is proposed ({d.root_cause})."]
    if n is None:
        return [f"{p.number}. {p.title} [{p.reversibility}]" for p in view.plans] + ["/plan N shows the commands."]
    if not 1 <= n <= len(view.plans):
        return [f"there is no fix {n}: the diagnosis has {len(view.plans)} (see /plan)"]
    p = view.plans[n - 1]
    out = [f"{p.number}. {p.title} [{p.reversibility}], plan {p.plan_hash}"]
    if p.error:
        out.append(f"cannot plan: {p.error}")
    out += [f"    $ {cmd}" for cmd in p.commands]
    state = status(p.plan_hash)
    out.append(f"approval: {state}" if state else "not yet asked for approval: /approve " + str(n))
    return out


def _evidence_lines(d: Diagnosis, root: Path | None) -> list[str]:
    view = build_view(d, root=root)
    out = ["Evidence:"] if view.evidence else ["The diagnosis cites no evidence."]
    for e in view.evidence:
        out += [f"  {e.when + '  ' if e.when else ''}{e.where or '(no location)'}", f"      {e.text}"]
    for s in view.signals:
        out.append(f"Other signal, {s.root_cause} {s.confidence:.2f}: {s.message}")
        if s.first is not None:
            out.append(f"  {s.first.when + '  ' if s.first.when else ''}{s.first.where or ''}")
            out.append(f"      {s.first.text}")
    out += [f"could not read: {u}" for u in view.unreadable]
    return out


def run_command(cmd: Command, d: Diagnosis | None, approvals: Callable[[], ChatApprovals], *,
                root: Path | None = None) -> list[str]:
    """The lines answering ``cmd`` (``/quit`` is the caller's to handle). ``approvals`` builds the
    approval side on first use (it loads the policy)."""
    if cmd.name == "help":
        return HELP.splitlines()
    if d is None:
        return ["Ask a question first: the first question runs the diagnosis."]
    if cmd.name == "evidence":
        return _evidence_lines(d, root)
    if cmd.name == "plan":
        def status(plan_hash: str) -> str | None:
            a = approvals()
            aid = a.requested.get(plan_hash)
            return f"{aid} {a.propose_setup.approvals.get(aid).status}" if aid else None
        return _plan_lines(d, cmd.number, root, status)
    assert cmd.number is not None
    if cmd.name == "approve":
        return approvals().approve(d, cmd.number)
    return approvals().deny(d, cmd.number, cmd.rest)
