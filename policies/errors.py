"""Exceptions of Warden's policy layer.

Loading policies fails loudly and never falls back to allowing anything: a file that does not
parse, does not type-check against the schema, or a config that is invalid raises one of these,
and Warden stops. ``str(err)`` is one line, ``<path>:<line>: <reason>`` (line omitted when the
error is about the whole file), fit for the CLI to print before exiting with code 2.

    PolicyError                 any policy-layer failure (path, line, reason)
    ├── PolicyParseError        a *.cedar file is not valid Cedar syntax
    ├── PolicyValidationError   a policy parses but breaks the schema, lacks an @id, or repeats one
    ├── SchemaError             the Cedar schema file cannot be read or parsed
    └── PolicyConfigError       the policy config (limits) cannot be read or is invalid

Evaluation never raises for a well-formed request: a request Cedar cannot evaluate is denied
(fail closed) and the decision says why.
"""

from __future__ import annotations

__all__ = [
    "PolicyError",
    "PolicyParseError",
    "PolicyValidationError",
    "SchemaError",
    "PolicyConfigError",
]


class PolicyError(Exception):
    """Base of every policy-layer error.

    Attributes:
        path: the file the error is about (policy, schema or config file), as given.
        line: 1-based line number in that file, or None when the error concerns the whole file.
        reason: what was wrong, in a few words (Cedar's own message where it gave one).
    """

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {' '.join(reason.split())}")


class PolicyParseError(PolicyError):
    """A Cedar policy file is not syntactically valid Cedar."""


class PolicyValidationError(PolicyError):
    """A policy parses but fails the schema, has no ``@id``, or reuses another policy's ``@id``."""


class SchemaError(PolicyError):
    """The Cedar schema file cannot be read or parsed."""


class PolicyConfigError(PolicyError):
    """The policy config file (blast-radius limits) cannot be read or fails validation."""
