"""Warden over the Model Context Protocol: its read tools, and only them, for other agents.

Results are the bounded results the agent's own model gets, redacted as the gateway redacts text
for external models, and every call is audited. See agent/mcpserver/server.py.
"""

from agent.mcpserver.server import EvidenceHolder, build_server, http_server, serve_http, serve_stdio, site_redactor
from agent.mcpserver.tools import READ_ONLY, register_read_tools, redact_value

__all__ = ["EvidenceHolder", "build_server", "http_server", "serve_http", "serve_stdio", "site_redactor", "READ_ONLY",
           "register_read_tools", "redact_value"]
