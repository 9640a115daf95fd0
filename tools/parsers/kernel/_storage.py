"""Kernel/system-log classifiers for file systems: Lustre/LNet, GPFS (Spectrum Scale), NFS, BeeGFS.

Shapes: the Lustre manual and lustre-discuss threads (``LustreError: 11-0: …-osc-…: operation
ost_write to node … failed: rc = -107``, ``Connection to … was lost; in progress operations …``,
``This client was evicted by …``, ``Connection restored to …``, LNet ``Timed out tx``); IBM Spectrum
Scale's mmfs log and syslog (``[E] Node … is being expelled because of an expired lease``, ``Lost
membership in cluster``, ``Unmounting file systems``, ``File System fs1 unmounted by the system``,
``Close connection to … (Connection timed out)``, 6027-xxxx messages); the Linux NFS client
(``nfs: server X not responding, still trying`` / ``nfs: server X OK``, stale file handles).
"""

from __future__ import annotations

import re

from tools.parsers.kernel._gpu import Classified

__all__ = ["classify_lustre", "classify_fs_client"]

# Targets and NIDs are found by their fixed tail and then walked back to the token start: a
# pattern like "[\w.-]+?-OST\d{4}" backtracks quadratically on long hostile lines.
_TARGET_TAIL = re.compile(r"-(?:MDT|OST)[0-9a-fA-F]{4}(?![0-9a-fA-F])")
_NID_TAIL = re.compile(r"@(?:o2ib|tcp|kfi|gni|ptl)\d*\b")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_NID_CHARS = _NAME_CHARS | {":"}
_RC = re.compile(r"\brc = (?P<rc>-?\d{1,6})")
_RECOVERED = re.compile(r"of (?P<total>\d{1,7}) clients (?P<ok>\d{1,7}) recovered and (?P<evicted>\d{1,7}) (?:were|was) evicted")
_LUSTRE_OP = re.compile(r"operation (?P<op>\w+) to node (?P<nid>\S+) failed")
_LUSTRE_STATES = [
    (re.compile(r"Unable to mount|lustre_fill_super\(\)|mount failed|Confi?guration from log \S+ failed from MGS"),
     "mount_failed"),
    # Server side: a target evicting a client it lost, threads stuck on the backing storage, recovery.
    (re.compile(r"haven't heard from client .* evicting it|evicting client at"), "client_evicted"),
    (re.compile(r"Service thread pid \d+ was inactive for|Service thread pid \d+ completed after"), "service_hung"),
    (re.compile(r"Recovery over after"), "recovery_complete"),
    (re.compile(r"Will be in recovery for at least|Denying connection for new client .* recovery"), "recovery_started"),
    (re.compile(r"Failing over |server umount \S+ complete"), "failover"),
    (re.compile(r"was lost; in progress operations"), "connection_lost"),
    (re.compile(r"This client was evicted by"), "evicted"),
    (re.compile(r"Connection restored to"), "connection_restored"),
    (re.compile(r"Request sent has timed out|Request sent has failed"), "request_timeout"),
    (re.compile(r"Timed out"), "lnet_timeout"),
    (re.compile(r"operation \w+ to node \S+ failed"), "op_failed"),
]

_GPFS_SOURCES = ("mmfs", "mmfsd", "gpfs", "mmsysmon", "mmfs.log")
_GPFS_RULES = [
    (re.compile(r"is being expelled|\bExpel(?:ling|led)?\b|expelled from", re.IGNORECASE), "expelled"),
    (re.compile(r"Lost membership in cluster|No quorum|quorum (?:loss|lost)|lease (?:renewal is overdue|expired)",
                re.IGNORECASE), "quorum_lost"),
    (re.compile(r"Unmounting file system|unmounted by the system|File system \S+ unmounted|forced unmount",
                re.IGNORECASE), "unmounted"),
    (re.compile(r"Stale (?:NFS )?file handle", re.IGNORECASE), "stale_handle"),
    (re.compile(r"Close connection to|Connection (?:to \S+ )?(?:lost|timed out|reset)|Disconnect(?:ed|ing) from",
                re.IGNORECASE), "lost_connection"),
    (re.compile(r"mmfsd (?:is not running|exited|terminated|is shutting down)|GPFS is (?:not running|down)|"
                r"daemon (?:is )?down|mmfs daemon is shutting down|mmfsd.*(?:failed|abnormal)|Reason for shutdown",
                re.IGNORECASE), "not_started"),
    (re.compile(r"Connected to|Accepted and connected|mounted file system|Mounted file system", re.IGNORECASE),
     "restored"),
    (re.compile(r"\bI/O error|\bEIO\b|Input/output error|disk (?:failure|is down)|unable to access disks|"
                r"(?:Read|Write) error on disk|no NSD server of the disk is available", re.IGNORECASE), "io_error"),
]
_GPFS_TEXT = re.compile(r"\bGPFS\b|\bmmfs|6027-\d{3,4}")
_GPFS_FS = re.compile(r"[Ff]ile [Ss]ystem (?P<fs>[\w.-]{1,64})|\bVolume (?P<vol>[\w-]{1,64})\.|"
                      r"\bof /(?P<mount>[\w-]{1,64})(?=[\s)]|$)")
"""The device name in an mmfs line: ``file system gpfs1``, the disk-failure form ``Volume gpfs1.``, or the
mount point of an I/O error on an inode (``of /gpfs1``: the default mount point is /<device>)."""
_GPFS_NODE = re.compile(r"\b(?:Node |to |from )?\d{1,3}(?:\.\d{1,3}){3} \((?P<node>[\w.-]{1,64})\)")
_NFS = re.compile(r"^nfs\d?: server (?P<server>[\w.:\[\]-]{1,128}) (?P<state>not responding|OK)\b")
_STALE = re.compile(r"\bStale (?:NFS )?file handle\b", re.IGNORECASE)
_BEEGFS = re.compile(r"^beegfs: .*(?:Communication error|Unable to|error|fail)", re.IGNORECASE)
_BEEGFS_RETRY = re.compile(r"^beegfs: .*Retrying communication with node: (?:beegfs-\w+ )?(?P<server>[\w.-]{1,64})",
                           re.IGNORECASE)
"""The BeeGFS client waiting on a server that does not answer (``Retrying communication with node:
beegfs-storage bstor02 [ID: 2]``): the request blocks until it does."""
_CEPH_EXPELLED = re.compile(r"^(?:libceph|ceph): .*(?:reconnect denied|evicted|blocklisted|blacklisted)", re.IGNORECASE)
_CEPH_LOST = re.compile(r"^(?:libceph|ceph): .*(?:session lost|socket closed|connection reset|mds\d+ hung|"
                        r"session_reset|caps stale)", re.IGNORECASE)
"""The CephFS kernel client: refused on reconnect or blocklisted by the MDS (the node is cut off until it
remounts), or its monitor/MDS sessions lost."""
_MODULE_FAILED = re.compile(
    r"^(?P<mod>beegfs|lustre|lnet|ko2iblnd|ksocklnd|ptlrpc|obdclass|mdc|osc|lov|mmfs\w*|tracedev|nfs|nfsv4|rpcrdma): "
    r"(?:Unknown symbol|disagrees about version of symbol)")
"""A file-system client's kernel module that will not load against the running kernel or OFED (``beegfs:
Unknown symbol ib_register_client (err -22)`` after an update): the client is not started on this node."""
_CLIENT_UNIT_FAILED = re.compile(r"(?P<mod>beegfs-client|beegfs-helperd|lustre|lnet|gpfs|mmfs)\S*\.service: "
                                 r"(?:Failed with result|Main process exited, code=exited, status=[1-9])", re.IGNORECASE)
_MODULE_FS = {"beegfs": "beegfs", "mmfs": "gpfs", "tracedev": "gpfs", "gpfs": "gpfs", "nfs": "nfs", "nfsv4": "nfs",
              "rpcrdma": "nfs"}


def _walk_back(text: str, end: int, allowed: frozenset[str], limit: int = 64) -> int:
    """Start index of the run of ``allowed`` characters that ends at ``end`` (at most ``limit``)."""
    start = end
    while start > 0 and end - start < limit and text[start - 1] in allowed:
        start -= 1
    return start


def _find_target(msg: str) -> str | None:
    """First Lustre target name (``lustre-OST0003``) in a message, without the -osc-… suffix."""
    for m in _TARGET_TAIL.finditer(msg):
        start = _walk_back(msg, m.start(), _NAME_CHARS)
        if start < m.start():
            return msg[start:m.end()].lstrip("-.")
    return None


def _find_nid(msg: str) -> str | None:
    """First LNet NID (``10.0.0.13@o2ib``) in a message."""
    for m in _NID_TAIL.finditer(msg):
        start = _walk_back(msg, m.start(), _NID_CHARS)
        if start < m.start():
            return msg[start:m.end()]
    return None


def classify_lustre(msg: str) -> Classified | None:
    """A Lustre/LNet error or state change (informational ``Lustre:`` lines are not events)."""
    if not msg.startswith(("LustreError:", "LNetError:", "Lustre:", "LNet:")):
        return None
    state = next((name for rx, name in _LUSTRE_STATES if rx.search(msg)), None)
    if state is None:
        if not msg.startswith(("LustreError:", "LNetError:")):
            return None
        state = "error"
    values: dict[str, object] = {"state": state}
    op = _LUSTRE_OP.search(msg)
    if op:
        values["op"] = op["op"]
    target, nid, rc = _find_target(msg), _find_nid(msg), _RC.search(msg)
    if target:
        values["target"] = target
    if nid:
        values["nid"] = nid
    if rc:
        values["rc"] = int(rc["rc"])
    if state == "recovery_complete" and (rec := _RECOVERED.search(msg)):
        values["clients"], values["evicted"] = int(rec["total"]), int(rec["evicted"])
    return "lustre_error", values


_FS_TYPES = ("gpfs", "nfs", "lustre", "beegfs", "weka", "ceph")
_MOUNT_HELPER = re.compile(r"bad option; .*/sbin/mount\.(?P<t1><type>|\w+) helper program|unknown filesystem type "
                           r"'(?P<t2>\w+)'|mount\.(?P<t3>\w+): No such device", re.IGNORECASE)
"""This node cannot mount a file system type at all (no ``mount.nfs`` helper, no kernel module): its own client."""
_MOUNT_FAILED = re.compile(r"mount\((?P<type>\w+)\): (?:\w+: )?mount failure (?P<server>[\w.-]{1,128}):\S* on "
                           r"(?P<mnt>/\S{0,200})|\bfailed to mount (?P<mnt2>/\S{0,200})", re.IGNORECASE)
"""autofs's report of a mount that failed (the reason is on another line: the helper, the server, the export)."""


def classify_fs_client(source: str, msg: str) -> Classified | None:
    """A GPFS, NFS or BeeGFS client/server event in one message; else None."""
    helper = _MOUNT_HELPER.search(msg)
    if helper:
        kind = next((t.rstrip("0123456789") for t in (helper["t1"], helper["t2"], helper["t3"]) if t and t != "<type>"), None)
        fs_type = "nfs" if kind is None and "nfs" in msg.lower() else (kind or "other").lower()
        return "fs_client", {"fs_type": fs_type if fs_type in _FS_TYPES else "other", "state": "not_mounted"}
    mount = _MOUNT_FAILED.search(msg) if source.startswith("automount") or "mount failure" in msg else None
    if mount:
        fs_type = (mount["type"] or "other").lower()
        return "fs_client", {"fs_type": fs_type if fs_type in _FS_TYPES else "other", "state": "error",
                             "server": mount["server"]}
    m = _MODULE_FAILED.match(msg) or _CLIENT_UNIT_FAILED.search(msg)
    if m:
        mod = m["mod"].lower().split("-")[0]
        fs_type = _MODULE_FS.get(mod, "gpfs" if mod.startswith("mmfs") else "lustre")
        return "fs_client", {"fs_type": fs_type, "state": "not_started"}
    if _CEPH_EXPELLED.search(msg):
        return "fs_client", {"fs_type": "ceph", "state": "expelled"}
    if _CEPH_LOST.search(msg):
        return "fs_client", {"fs_type": "ceph", "state": "lost_connection"}
    m = _NFS.match(msg)
    if m:
        return "fs_client", {"fs_type": "nfs", "server": m["server"],
                             "state": "restored" if m["state"] == "OK" else "not_responding"}
    gpfs = source in _GPFS_SOURCES or bool(_GPFS_TEXT.search(msg))
    if gpfs:
        state = next((name for rx, name in _GPFS_RULES if rx.search(msg)), None)
        if state is None:
            return None
        fs = _GPFS_FS.search(msg)
        node = _GPFS_NODE.search(msg)
        return "fs_client", {"fs_type": "gpfs", "state": state, "fs": next((g for g in fs.groups() if g), None) if fs else None,
                             "server": node["node"] if node else None}
    if _STALE.search(msg):
        return "fs_client", {"fs_type": "nfs" if "nfs" in msg.lower() else "other", "state": "stale_handle"}
    if (retry := _BEEGFS_RETRY.search(msg)) is not None:
        return "fs_client", {"fs_type": "beegfs", "state": "not_responding", "server": retry["server"]}
    if _BEEGFS.search(msg):
        return "fs_client", {"fs_type": "beegfs", "state": "lost_connection" if "ommunication" in msg else "error"}
    return None
