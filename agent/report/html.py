"""A report as one HTML page: every piece of text escaped, pictures referenced by file name.

All text goes through :func:`html.escape` (``quote=True``) after agent/render's cleaning, so job names,
log lines and drain reasons can never become markup, a script or a link. A Content-Security-Policy
meta tag allows only the page's own style and images from its own directory, a second fence should a
future change forget an escape.
"""

from __future__ import annotations

from html import escape

from agent.render.safe import clean_line
from agent.render.view import EvidenceLine, when_text
from agent.report.content import ReportContent

__all__ = ["report_html"]

_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
.headline{font-weight:bold;font-size:1.1em}.q{color:#555}code,pre{font-family:ui-monospace,monospace;font-size:.9em}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto}table{border-collapse:collapse;font-size:.9em}
td,th{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}.cited{font-weight:bold}
img{max-width:100%;border:1px solid #eee}.where{color:#0550ae}.when{color:#666;white-space:nowrap}"""
_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'"


def _e(text: str) -> str:
    return escape(text, quote=True)


def _evidence(e: EvidenceLine) -> str:
    when = f'<span class="when">{_e(e.when)}</span> ' if e.when else ""
    where = f'<code class="where">{_e(e.where)}</code>: ' if e.where else ""
    return f"<li>{when}{where}{_e(e.text)}</li>"


def _diagnosis(c: ReportContent) -> list[str]:
    v = c.view
    out = [f'<p class="headline">{_e(v.headline())}</p>']
    if v.question:
        out.append(f'<p class="q">Q: {_e(v.question)}</p>')
    out.append(f"<p>{_e(v.summary)}</p>")
    if v.partial:
        out.append(f"<p><em>Partial result:</em> {_e(v.partial)}</p>")
    if v.evidence:
        out += ["<h3>Evidence</h3>", "<ul>", *(_evidence(e) for e in v.evidence), "</ul>"]
    if v.signals:
        out += ["<h3>Other signals (symptoms or lesser causes)</h3>", "<ul>"]
        out += [f"<li>{_e(s.root_cause)} {s.confidence:.2f}: {_e(s.message)}</li>" for s in v.signals]
        out.append("</ul>")
    if v.plans:
        out += ["<h3>Fixes (dry run: nothing was executed)</h3>", "<ol>"]
        for p in v.plans:
            cmds = "".join(f"<pre><code>{_e(cmd)}</code></pre>" for cmd in p.commands)
            err = f"<br><em>cannot plan:</em> {_e(p.error)}" if p.error else ""
            out.append(f"<li>{_e(p.title)} [{_e(p.reversibility)}, plan <code>{_e(p.plan_hash[:16])}</code>]"
                       f"{err}{cmds}</li>")
        out.append("</ol>")
    if v.unreadable:
        out += ["<h3>Could not read</h3>", "<ul>", *(f"<li>{_e(u)}</li>" for u in v.unreadable), "</ul>"]
    if v.run_id:
        out.append(f"<p>run <code>{_e(v.run_id)}</code></p>")
    return out


def _timeline(c: ReportContent) -> list[str]:
    if not c.timeline:
        return ["<p>No piece of evidence carried a time.</p>"]
    out = [f'<p><img src="{_e(c.timeline_png)}" alt="Timeline of the evidence"></p>'] if c.timeline_png else []
    out += ["<table>", "<tr><th>time (UTC)</th><th>source</th><th>where</th><th>what</th></tr>"]
    for e in c.timeline:
        cls = ' class="cited"' if e.cited else ""
        out.append(f'<tr{cls}><td class="when">{_e(when_text(e.at) or "")}</td><td>{_e(e.lane)}</td>'
                   f"<td><code>{_e(clean_line(e.where))}</code></td><td>{_e(clean_line(e.text))}</td></tr>")
    out.append("</table>")
    if c.timeline_cut:
        out.append(f"<p>{c.timeline_cut} more entries not shown.</p>")
    return out


def _gpus(c: ReportContent) -> list[str]:
    out: list[str] = []
    if c.heatmap_png:
        out += [f"<p>{_e(c.heatmap_caption())}</p>",
                f'<p><img src="{_e(c.heatmap_png)}" alt="Heat map of DCGM fields per node and GPU"></p>']
    if c.fleet_png:
        out.append(f'<p><img src="{_e(c.fleet_png)}" alt="Fleet-wide distribution of each DCGM field"></p>')
    if c.stats:
        out += ["<table>", "<tr><th>field</th><th>fleet</th></tr>"]
        out += [f"<tr><td>{_e(s.title)}</td><td>{_e(s.describe())}</td></tr>" for s in c.stats]
        out.append("</table>")
    out += [f"<p><em>{_e(n)}</em></p>" for n in c.notes]
    return out


def report_html(c: ReportContent) -> str:
    """The report as a complete HTML5 document."""
    source = f" from <code>{_e(c.snapshot)}</code> (evidence paths are relative to it)" if c.snapshot else ""
    body = ["<h1>Warden report</h1>", f"<p>Generated {_e(when_text(c.generated_at) or '')}{source}.</p>",
            "<h2>Diagnosis</h2>", *_diagnosis(c), "<h2>Timeline</h2>", *_timeline(c),
            "<h2>GPUs (DCGM)</h2>", *_gpus(c)]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
            f"<title>{_e('Warden report: ' + c.view.headline())}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
