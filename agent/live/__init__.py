"""Live mode: the ``warden.toml`` configuration, and wiring sources, collection and execution to it."""

__all__ = ["config", "session"]
