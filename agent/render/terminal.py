"""A DiagnosisView on a terminal (rich), verdict first, every command whole on a line of its own.

Layout, at any width::

    gpu_hardware_fault: node:gpu007, job:73412 · confidence 0.99 · 32.6 GPU-h lost
    Q: Job 73412 has logged nothing for 40 minutes. Why?
    GPU hardware fault: 3 Xid 79 events on gpu007 ...

    Evidence
      2026-03-04 09:51:58Z  evals/incidents/…/snapshot/kernel/gpu007.log:27
          NVRM: Xid (PCI:0000:9a:00): 79, ...

    Fixes (dry run: nothing was executed)
      1. drain gpu007: warden: GPU hardware fault (Xid 79)  [reversible]
         scontrol update NodeName=gpu007 State=DRAIN 'Reason=warden: GPU hardware fault (Xid 79)'

The headline always fits one line (culprits beyond the width become ``+N more``). Prose is wrapped
here, with hanging indents and no trailing blanks; paths and commands are never wrapped by Warden:
the terminal may fold a long one visually, but no newline is inserted, so a triple-click or a copy
takes the whole command. Nothing is ever read as rich markup.
"""

from __future__ import annotations

import textwrap

from rich.console import Console
from rich.text import Text

from agent.render.view import DiagnosisView, EvidenceLine, fit_culprits

__all__ = ["print_diagnosis", "headline_text", "wrap"]

_CAUSE_STYLE = {"healthy": "bold green", "inconclusive": "bold yellow"}


def headline_text(view: DiagnosisView, width: int) -> Text:
    """The one-line headline, styled, fitted to ``width`` columns."""
    line = view.headline(fit_culprits(view, width))
    text = Text(line, no_wrap=True, overflow="ellipsis")
    text.stylize(_CAUSE_STYLE.get(view.root_cause, "bold red"), 0, len(view.root_cause))
    if view.partial:
        text.stylize("yellow", len(line) - len("partial"), len(line))
    return text


def wrap(text: str, width: int, *, indent: int = 0, hang: int | None = None) -> list[str]:
    """``text`` wrapped to ``width`` columns: first line indented by ``indent``, the rest by ``hang``."""
    rest = indent if hang is None else hang
    out: list[str] = []
    for para in text.split("\n"):
        out += textwrap.wrap(para, width=max(width, rest + 20), initial_indent=" " * indent,
                             subsequent_indent=" " * rest, break_on_hyphens=False) or [""]
    return out


class _Printer:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.width = console.width

    def line(self, text: Text | str, style: str = "") -> None:
        """One physical line as given (never wrapped by rich: long ones fold in the terminal only)."""
        self.console.print(text if isinstance(text, Text) else Text(text, style=style), soft_wrap=True, crop=False)

    def prose(self, text: str, *, indent: int = 0, hang: int | None = None, style: str = "") -> None:
        for ln in wrap(text, self.width, indent=indent, hang=hang):
            self.line(ln, style)

    def evidence(self, e: EvidenceLine, indent: int = 2) -> None:
        head = Text(" " * indent)
        if e.when:
            head.append(e.when, style="dim")
            head.append("  ")
        head.append(e.where or "(no location)", style="cyan")
        self.line(head)
        self.prose(e.text, indent=indent + 4)


def print_diagnosis(view: DiagnosisView, console: Console) -> None:
    """Print ``view``: headline, question, summary, evidence, other signals, fixes, what could not be read."""
    out = _Printer(console)
    console.print(headline_text(view, out.width))  # cut with an ellipsis if even the shortest form is too wide
    if view.question:
        out.prose("Q: " + view.question, hang=3, style="dim")
    out.prose(view.summary)
    if view.partial:
        out.prose(f"Partial result: {view.partial}", style="yellow")
    if view.evidence:
        out.line("")
        out.line("Evidence", "bold")
        for e in view.evidence:
            out.evidence(e)
    if view.signals:
        out.line("")
        out.line("Other signals (symptoms or lesser causes)", "bold")
        for sig in view.signals:
            out.prose(f"{sig.root_cause} {sig.confidence:.2f}: {sig.message}", indent=2, hang=4)
            if sig.first is not None:
                out.evidence(sig.first, indent=4)
    if view.plans:
        out.line("")
        out.line("Fixes (dry run: nothing was executed)", "bold")
        for p in view.plans:
            label = f"{p.number}. "
            out.prose(f"{label}{p.title}  [{p.reversibility}]", indent=2, hang=2 + len(label))
            if p.error:
                out.prose(f"cannot plan: {p.error}", indent=5, style="yellow")
            for cmd in p.commands:
                out.line(Text(" " * 5) + Text(cmd, style="green"))
    elif view.root_cause == "healthy":
        out.line("")
        out.line("No fixes proposed: nothing is wrong that Warden can see.", "green")
    if view.unreadable:
        out.line("")
        out.line("Could not read", "bold yellow")
        for u in view.unreadable:
            out.line(f"  could not read: {u}", "yellow")
    if view.run_id:
        out.line("")
        out.line(f"run {view.run_id}  (warden runs show {view.run_id[:12]})", "dim")
