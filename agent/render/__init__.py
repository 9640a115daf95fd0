"""Rendering a Diagnosis for people and programs, shared by every front end (CLI, chat, Slack, reports).

``view.build_view`` turns a Diagnosis into a :class:`~agent.render.view.DiagnosisView` (cleaned text,
openable paths, quoted commands); ``terminal``, ``markdown`` and ``document`` draw it. Nothing here
imports the agent loop, so a front end can render without pulling in pydantic-ai.
"""

from agent.render.document import SCHEMA_VERSION, OutputFormat, diagnosis_document, dump, dump_json, dump_yaml
from agent.render.markdown import md_code, md_escape, to_markdown
from agent.render.safe import clean, clean_line, shell_command, shell_quote
from agent.render.terminal import headline_text, print_diagnosis
from agent.render.view import DiagnosisView, EvidenceLine, PlanView, build_view, evidence_root

__all__ = [
    "SCHEMA_VERSION", "OutputFormat", "diagnosis_document", "dump", "dump_json", "dump_yaml",
    "md_code", "md_escape", "to_markdown",
    "clean", "clean_line", "shell_command", "shell_quote",
    "headline_text", "print_diagnosis",
    "DiagnosisView", "EvidenceLine", "PlanView", "build_view", "evidence_root",
]
