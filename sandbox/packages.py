"""The Debian packages the sandbox needs, and installing the missing ones (root only)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from sandbox.errors import MissingPackagesError, SandboxError

__all__ = ["REQUIRED", "missing_packages", "ensure_packages"]

REQUIRED: dict[str, str] = {
    "slurmctld": "/usr/sbin/slurmctld",
    "slurmd": "/usr/sbin/slurmd",
    "slurm-client": "/usr/bin/sinfo",
    "munge": "/usr/sbin/munged",
    "slurmdbd": "/usr/sbin/slurmdbd",
    "mariadb-server": "/usr/sbin/mariadbd",
    "prometheus": "/usr/bin/prometheus",
    "prometheus-alertmanager": "/usr/bin/prometheus-alertmanager",
    "openssh-server": "/usr/sbin/sshd",
}
"""Debian package → a file it installs (its presence means the package is there)."""

_POLICY_RC_D = Path("/usr/sbin/policy-rc.d")
_POLICY_DENY = "#!/bin/sh\n# Written by Warden's sandbox while it installs packages: start no services.\nexit 101\n"


def missing_packages() -> list[str]:
    """Names of the required Debian packages whose marker file is absent."""
    return [pkg for pkg, marker in REQUIRED.items() if not os.path.exists(marker)]


def ensure_packages(*, install: bool = True, timeout_s: float = 900.0) -> list[str]:
    """Install the missing required packages with apt-get when running as root.

    Runs ``apt-get update`` then ``apt-get install -y --no-install-recommends <missing>`` with
    ``DEBIAN_FRONTEND=noninteractive``. While it installs, a temporary ``/usr/sbin/policy-rc.d``
    (Debian's standard switch, only when none exists) keeps the packages' system services from
    starting: a system Prometheus on :9090 or slurmctld on :6817 would collide with the sandbox's.

    Returns:
        The packages that were installed (empty when nothing was missing).

    Raises:
        MissingPackagesError: when packages are missing and this is not root, apt-get is absent,
            or ``install`` is False.
        SandboxError: when apt-get fails (its last output lines are in the message).
    """
    missing = missing_packages()
    if not missing:
        return []
    if not install:
        raise MissingPackagesError(missing, "installation was not requested")
    if os.geteuid() != 0:
        raise MissingPackagesError(missing, "not running as root, cannot install them")
    if shutil.which("apt-get") is None:
        raise MissingPackagesError(missing, "apt-get is not available on this host")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    ours = not _POLICY_RC_D.exists()
    if ours:
        _POLICY_RC_D.write_text(_POLICY_DENY)
        _POLICY_RC_D.chmod(0o755)
    try:
        for argv in (
            ["apt-get", "update", "-q"],
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
        ):
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
            if proc.returncode != 0:
                tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
                raise SandboxError(f"{' '.join(argv)} exited {proc.returncode}: {tail}")
    finally:
        if ours:
            _POLICY_RC_D.unlink(missing_ok=True)
    still = missing_packages()
    if still:
        raise MissingPackagesError(still, "apt-get reported success but they are still missing")
    return missing
