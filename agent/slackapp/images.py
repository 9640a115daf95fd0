"""The report's pictures in the Slack thread of an answer (issue 11: the Slack message uploads them).

After Warden posts a Diagnosis, :func:`share_report` writes the report of that investigation
(agent/report: report.md, report.html and the PNGs) under ``$WARDEN_HOME/reports/<run id>/`` and
uploads the two pictures that say most at a glance into the answer's thread, with one comment saying
what each shows and where the whole report is:

- ``gpu-heatmap.png``: per node (rows) and GPU (columns) utilisation, temperature, SM clock, last
  Xid and memory faults, the culprits and the nodes farthest from the fleet first;
- ``timeline.png``: the evidence on one UTC axis (kernel, job log, scheduler, Kubernetes lanes).

A picture that was not drawn (no DCGM values read, no timed evidence) is simply not uploaded. The
fleet histogram stays in the report directory.
"""

from __future__ import annotations

import re
from pathlib import Path

from agent.runbooks.investigate import Investigation
from agent.slackapp import mrkdwn
from agent.slackapp.poster import SlackPoster
from agent.store import warden_home

__all__ = ["SHARED", "reports_dir", "share_report"]

SHARED: dict[str, str] = {
    "gpu-heatmap.png": "DCGM per node and GPU: utilisation, temperature, SM clock, last Xid, memory faults "
                       "(culprits and outliers first)",
    "timeline.png": "The evidence on one UTC axis: kernel, job log, scheduler and Kubernetes lanes",
}
"""File name -> title of the pictures uploaded, in this order."""
_RUN = re.compile(r"[^A-Za-z0-9_-]")


def reports_dir(run_id: str | None) -> Path:
    """``$WARDEN_HOME/reports/<run id>`` (``unsaved`` for a run the store did not keep)."""
    return warden_home() / "reports" / (_RUN.sub("", run_id or "")[:64] or "unsaved")


def share_report(poster: SlackPoster, channel: str, thread_ts: str | None, inv: Investigation) -> list[str]:
    """Write ``inv``'s report and upload its heat map and timeline into the thread; returns the file ids
    (none when neither picture could be drawn).

    Raises:
        ConfigError: the report directory cannot be written.
        SlackPostError: Slack refused the upload.
    """
    from agent.report.build import write_report  # matplotlib: loaded only when a report is due

    out = reports_dir(inv.diagnosis.run_id)
    files = write_report(inv.diagnosis, inv.facts, out)
    drawn = {p.name: p for p in files.images}
    shown = [(drawn[name], title) for name, title in SHARED.items() if name in drawn]
    if not shown:
        return []
    what = "; ".join(f"`{p.name}`: {mrkdwn.line(t, 160)}" for p, t in shown)
    comment = (f":bar_chart: Report of run `{mrkdwn.line(inv.diagnosis.run_id or '-', 40)}` — {what}. "
               f"The whole report (HTML, Markdown) is `{mrkdwn.line(str(files.html), 300)}` on Warden's host.")
    return poster.upload(channel, shown, thread_ts=thread_ts, comment=comment)
