"""Warden's tool layer: sources, parsers, typed models, read tools, checks and actions.

Imports only third-party packages; everything above it (agent, evals, sandbox) imports it.
"""

__all__: list[str] = []
