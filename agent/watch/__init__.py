"""``warden watch``: scheduled sweeps with the deterministic engine, posting only what is new."""

__all__ = ["sweep"]
