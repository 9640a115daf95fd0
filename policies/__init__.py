"""Warden's policy layer: Cedar policies (``*.cedar``), their schema, and the engine that
evaluates a proposed action to allow, needs_approval or deny. Imports only third-party packages.
"""

from policies.config import PolicyConfig
from policies.engine import PolicyDecision, PolicyEngine, PolicyRequest, explain
from policies.errors import (
    PolicyConfigError,
    PolicyError,
    PolicyParseError,
    PolicyValidationError,
    SchemaError,
)

__all__ = [
    "PolicyConfig",
    "PolicyDecision",
    "PolicyEngine",
    "PolicyRequest",
    "explain",
    "PolicyError",
    "PolicyParseError",
    "PolicyValidationError",
    "SchemaError",
    "PolicyConfigError",
]
