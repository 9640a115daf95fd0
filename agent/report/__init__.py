"""Reports to share: a Diagnosis, its evidence on one clock and DCGM heat maps, as Markdown and HTML.

``write_report`` draws with matplotlib (imported on use); ``report_target`` finds the Diagnosis of a
past run or diagnoses a path. Nothing here runs a command on the cluster.
"""

from agent.report.build import DEFAULT_TOP, ReportFiles, report_target, write_report

__all__ = ["DEFAULT_TOP", "ReportFiles", "report_target", "write_report"]
