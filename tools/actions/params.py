"""Validated parameter types for actions: a target must name exactly one thing.

Defence in depth behind the agent's own checks: a node name must not be a Slurm hostlist
(``gpu[001-128]`` would drain the whole range), a checkpoint path must not smuggle more
``--export`` variables (``x,LD_PRELOAD=...``), a pod name must not walk the API path (``../``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, StringConstraints

__all__ = ["NodeName", "JobId", "CheckpointPath", "UserName", "K8sName"]

_RESERVED_NODE_NAMES = frozenset({"all", "default"})
"""Words Slurm reads as keywords where a node name goes (``NodeName=ALL`` is every node)."""


def _not_reserved(name: str) -> str:
    if name.lower() in _RESERVED_NODE_NAMES:
        raise ValueError(f"{name!r} is a Slurm keyword (every node / the defaults), not one node")
    return name


NodeName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$"),
                     AfterValidator(_not_reserved)]
"""One host name: letters, digits, dot, dash, underscore; no hostlist brackets, commas or spaces,
and not Slurm's ``ALL`` or ``DEFAULT``."""

JobId = Annotated[str, StringConstraints(pattern=r"^[0-9]{1,12}(?:_[0-9]{1,9})?(?:\+[0-9]{1,4})?$")]
"""A Slurm job id: ``4242``, an array task ``4242_7`` or a het component ``4242+1``."""

CheckpointPath = Annotated[str, StringConstraints(pattern=r"^/[A-Za-z0-9._/=+@:-]{1,1023}$")]
"""An absolute path without commas, spaces, quotes or shell metacharacters."""

UserName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9._-]{0,63}$")]
"""A login name (letters, digits, dot, dash, underscore; no spaces or shell characters; at most 64)."""

K8sName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")]
"""A Kubernetes object name or namespace (RFC 1123 subdomain)."""
