"""Job-log lines about the job's transports: its NIC (NCCL NET/IB and NET/OFI, UCX, libfabric) and its file
systems (ESTALE, ENOTCONN, EIO, a working directory that is not mounted).

Shapes: NCCL's net_ib.cc async events, aws-ofi-nccl's completion errors, UCX ib_mlx5_log.c, libfabric CQ
errors, slurmstepd's ``couldn't chdir`` and the errno texts Python and the C library print.
"""

from __future__ import annotations

import re

from tools.parsers.joblog.job_log_lines import Classified, exception_type

__all__ = ["net_event", "fs_error"]

_NET_EVENT = [
    (re.compile(r"NET/IB ?: (?P<dev>\S+?:\d+)? ?Got async event ?: ?(?P<what>[\w ]+)", re.IGNORECASE), "nccl_ib"),
    (re.compile(r"UCX\s+(?:ERROR|WARN)\s+(?P<what>.*(?:retry count exceeded|Endpoint timeout|unhandled timeout"
                r"|Connection reset|Input/output error|transport error|remote access error)[^,]*)", re.IGNORECASE), "ucx"),
    (re.compile(r"(?P<what>Transport retry count exceeded|IBV_WC_RETRY_EXC_ERR|IBV_WC_REM_ACCESS_ERR|"
                r"local catastrophic error)", re.IGNORECASE), "other"),
    (re.compile(r"\b(?:libfabric|fi_cq_readerr|cxi_\w+|efa_\w+)\b.*?(?P<what>\berror\b[^,]*)", re.IGNORECASE), "libfabric"),
    # aws-ofi-nccl (EFA): "NET/OFI Request 0x… completed with error. RC: 5. Error: Input/output error."
    (re.compile(r"NET/OFI\b.*?(?P<what>completed with error[^.]*\.(?: RC: \d+\.)?(?: Error: [^.]+)?)", re.IGNORECASE), "libfabric"),
]
_NET_DEVICE = re.compile(r"\b(?P<dev>mlx\d_\d+(?::\d+)?|ib[a-z0-9]+|hfi\d_\d+)\b")
# ibv_event_type_str's informational events (libibverbs verbs.c): the subnet manager moved, re-registered
# the port or changed a table, or a QP reached an ordinary state; none means the link or HCA failed.
_NET_BENIGN = re.compile(r"port active|port_active|GID table change|lid change|SM change|client reregist|"
                         r"P_Key change|pkey change|communication established|send queue drained|SQ drained|"
                         r"last WQE reached|SRQ limit reached|path migrated\b", re.IGNORECASE)
_NET_REMOTE = re.compile(r"retry count exceeded|RETRY_EXC|timeout|timed out|remote|REM_ACCESS|connection reset",
                         re.IGNORECASE)
_FS_ERROR = [
    # slurmstepd cannot enter the job's working directory: the file system is not mounted on that node.
    (re.compile(r"couldn't chdir to `?'?/[^:]+: No such file or directory"), "ENOENT_MOUNT"),
    (re.compile(r"Stale (?:NFS )?file handle|Errno 116\b|ESTALE", re.IGNORECASE), "ESTALE"),
    (re.compile(r"Transport endpoint is not connected|Errno 107\b|ENOTCONN", re.IGNORECASE), "ENOTCONN"),
    (re.compile(r"Input/output error|Errno 5\b|\bEIO\b", re.IGNORECASE), "EIO"),
]
_FS_PATH = re.compile(r"""['"`](?P<path>/[^'"`\s]{1,300})['"]|(?:^|\s)(?P<bare>/[\w./-]{1,300}):""")

def net_event(message: str) -> Classified | None:
    """A transport event of the printing host's own NIC (NCCL NET/IB async event, UCX retries); else None."""
    for rx, transport in _NET_EVENT:
        m = rx.search(message)
        if m:
            dev = m.groupdict().get("dev") or (d["dev"] if (d := _NET_DEVICE.search(message)) else None)
            what = " ".join(m["what"].split())[:80]
            fields = {"transport": transport, "what": what, "fatal": "false" if _NET_BENIGN.search(what) else "true",
                      "local": "false" if _NET_REMOTE.search(what) else "true"}
            if dev:
                fields["device"] = dev
            return "net_event", exception_type(message), fields
    return None


def fs_error(message: str) -> Classified | None:
    """A file-system error the job saw (ESTALE, ENOTCONN, EIO) with the path when printed; else None."""
    for rx, errno in _FS_ERROR:
        if rx.search(message):
            fields = {"error": errno}
            p = _FS_PATH.search(message)
            if p:
                fields["path"] = (p["path"] or p["bare"])[:300]
            return "fs_error", exception_type(message), fields
    return None
