"""The host every failing NCCL connection involves: pairs of (local, remote) RDMA endpoints from NCCL's IB/RoCE
connection errors (``Call to ibv_modify_qp failed with 110 Connection timed out, … local GID ::ffff:10.103.21.1,
remote GID ::ffff:10.103.17.1``), GIDs mapped to the hosts that print them as their local GID. When one host is
an end of every failing pair (and the pairs are several), its NIC, cable or switch port is the fault — not the
peers that reported it. Source: NCCL ``ibvwrap.c`` / ``net_ib.cc`` WARN lines in job logs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from tools.parsers.joblog.job_log_lines import prefix_host

__all__ = ["common_endpoint"]

_PAIR = re.compile(r"local GID (?P<local>[0-9a-fA-F:.]{3,45}), remote GID (?P<remote>[0-9a-fA-F:.]{3,45})")
_CONNECT = re.compile(r"ibv_modify_qp failed|Connection timed out|RTR|RTS|ibv_create_qp|connect", re.IGNORECASE)


def common_endpoint(messages: Iterable[str], min_pairs: int = 3) -> str | None:
    """The host (as the logs print it) at one end of every failing connection, when there are at least
    ``min_pairs`` distinct pairs and no other host is in all of them; None otherwise."""
    gid_host: dict[str, str] = {}
    pairs: set[frozenset[str]] = set()
    for msg in messages:
        m = _PAIR.search(msg)
        if m is None or not _CONNECT.search(msg):
            continue
        host = prefix_host(msg)
        if host:
            gid_host.setdefault(m["local"], host)
        pairs.add(frozenset((m["local"], m["remote"])))
    if len(pairs) < min_pairs:
        return None
    counts = Counter(g for p in pairs for g in p)
    everywhere = [g for g, n in counts.items() if n == len(pairs)]
    if len(everywhere) != 1:
        return None
    return gid_host.get(everywhere[0])
