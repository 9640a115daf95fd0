"""The agent layer: pydantic-ai agent, approvals, audit, runbooks and the front ends (CLI, Slack)."""

__all__: list[str] = []
