"""Runbooks and what every front end shares: the target, one investigation, the bounded pool."""

__all__ = ["target", "investigate", "pool"]
