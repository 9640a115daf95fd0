"""Recorded incidents, the replay runner and the scorers. Imports only tools/."""

__all__: list[str] = []
