"""Errors of the sandbox cluster.

    WardenError (tools.errors)
    └── SandboxError            the sandbox could not be started, stopped or changed
        ├── MissingPackagesError  Debian packages are missing and cannot be installed here
        ├── SandboxTimeout        a bounded wait ran out (names what it waited for and the log to read)
        └── FaultError            a fault could not be injected or cleared
"""

from __future__ import annotations

from tools.errors import WardenError

__all__ = ["SandboxError", "MissingPackagesError", "SandboxTimeout", "FaultError"]


class SandboxError(WardenError):
    """The sandbox could not be started, stopped, queried or changed."""


class MissingPackagesError(SandboxError):
    """Required Debian packages are missing and this process cannot install them (not root).

    Attributes:
        packages: the missing Debian package names.
    """

    def __init__(self, packages: list[str], why: str) -> None:
        self.packages = list(packages)
        cmd = "apt-get update && apt-get install -y --no-install-recommends " + " ".join(packages)
        super().__init__(f"missing Debian packages: {', '.join(packages)} ({why}); as root run: {cmd}")


class SandboxTimeout(SandboxError):
    """A bounded wait in the sandbox ran out."""


class FaultError(SandboxError):
    """A fault could not be injected or cleared."""
