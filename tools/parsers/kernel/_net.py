"""Kernel-log classifiers for networks and buses: InfiniBand and Ethernet/RoCE link changes, PCIe AER.

Shapes: hfi1 (Omni-Path) ``hfi1_0: set_link_state: current LINKUP, new OFFLINE``, mlx5_core ``Port: 1 Link DOWN`` / ``Port module event[error]: module 0, Cable error`` (mlx5
driver messages), ``ib0: lost carrier``, Ethernet ``ens1f0np0: Link down`` (mlx5 RoCE), ``NIC Link is
Down`` (ixgbe/i40e/ice/bnxt_en), and the PCIe AER driver's ``AER: Corrected error received`` /
``PCIe Bus Error: severity=Uncorrected (Fatal)``.
"""

from __future__ import annotations

import re

from tools.parsers.kernel._gpu import Classified, normalize_pci

__all__ = ["classify_link", "classify_pcie"]

_IB_PORT = re.compile(r"(?P<dev>mlx\d_\d+|mlx\d_core \S+)?:? ?Port: (?P<port>\d+) Link (?P<state>DOWN|ACTIVE|INIT|ARMED|UP)\b")
_IB_MODULE = re.compile(r"(?:mlx\d_port_module_event.*)?Port module event(?P<err>\[error\])?: module (?P<module>\d+), (?P<detail>.*)")
_CARRIER = re.compile(r"^(?:IPv6: ADDRCONF\(NETDEV_CHANGE\): )?(?P<dev>[a-z][\w.-]{0,31}): (?P<what>lost carrier|link becomes ready|carrier on)")
_LINK_UPDOWN = re.compile(r"^(?:mlx\d_core|ixgbe|i40e|ice|bnxt_en|tg3|igb|e1000e|ena|gve|virtio_net)? ?\S* ?"
                          r"(?P<dev>(?:ib|ibp|ens|enp|eno|eth|bond)[\w.-]{0,24}): (?:NIC )?Link (?:is )?(?P<state>up|down)\b",
                          re.IGNORECASE)
_OPA = re.compile(r"(?P<dev>hfi1_\d+): set_link_state: current (?P<cur>[A-Z_]+), new (?P<new>[A-Z_]+)")
"""Omni-Path (hfi1 driver) port state changes: reaching LINKUP/ACTIVE is up; leaving it for OFFLINE/DISABLED is
down; POLL/CONFIG and retries between them are link training (not a state of their own here)."""
_OPA_STATE = {"LINKUP": "up", "ACTIVE": "up", "ARMED": "up", "OFFLINE": "down", "DISABLED": "down", "DOWN": "down"}
_AER = re.compile(r"\bAER: (?P<sev>Corrected|Uncorrected|Multiple Corrected|Multiple Uncorrected)[^:]*error", re.IGNORECASE)
_AER_SOURCE = re.compile(r"(?:received|from):? ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)")
_DEGRADED = re.compile(r"available PCIe bandwidth, limited by .+ \(capable of ")
_PCIE_SEV = re.compile(r"PCIe Bus Error: severity=(?P<sev>Corrected|Uncorrected|Uncorrectable)", re.IGNORECASE)


def _link_type(dev: str) -> str:
    return "ib" if dev.startswith(("ib", "mlx")) else "ethernet"


_SXID = re.compile(r"(?P<dev>nvidia-nvswitch\d{1,3}): SXid \([^)]{0,40}\): (?P<sxid>\d{1,6}), (?P<sev>Fatal|Non-fatal)"
                   r"(?:, Link (?P<link>\d{1,4}))?")
"""NVSwitch errors as the driver prints them (NVIDIA Fabric Manager User Guide, "NVSwitch SXid errors"):
``nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up``. A fatal SXid takes the
NVLink ports through that switch down until the switch is reset."""


def classify_link(msg: str) -> Classified | None:
    """An InfiniBand or Ethernet/RoCE port, carrier or cable-module event, or a fatal NVSwitch SXid, in one
    message; else None (non-fatal SXids are not link events)."""
    if "SXid" in msg and (m := _SXID.search(msg)):
        if m["sev"] != "Fatal":
            return None
        return "ib_link", {"state": "error", "link_type": "nvswitch", "device": m["dev"],
                           "port": f"link {m['link']}" if m["link"] else None, "detail": f"SXid {m['sxid']} fatal"}
    if "set_link_state" in msg and (m := _OPA.search(msg)):
        state = _OPA_STATE.get(m["new"])
        if state == "down" and _OPA_STATE.get(m["cur"]) != "up":
            state = None  # a training retry (POLL -> OFFLINE) is not a loss of the link; LINKUP -> OFFLINE is
        return ("ib_link", {"state": state, "port": "1", "link_type": "opa", "device": m["dev"],
                            "detail": f"{m['cur']} -> {m['new']}"}) if state else None
    m = _IB_PORT.search(msg)
    if m:
        state = {"DOWN": "down", "ACTIVE": "up", "UP": "up"}.get(m["state"], m["state"].lower())
        return "ib_link", {"state": state, "port": m["port"], "link_type": "ib",
                           "device": m["dev"].split()[-1] if m["dev"] else None}
    m = _IB_MODULE.search(msg)
    if m:
        return "ib_link", {"state": "module_error" if m["err"] else "module_event", "module": m["module"],
                           "detail": m["detail"][:200], "link_type": "ib"}
    m = _CARRIER.search(msg)
    if m and m["dev"].startswith(("ib", "en", "eth", "bond")):
        return "ib_link", {"state": "down" if m["what"] == "lost carrier" else "up", "port": m["dev"],
                           "link_type": _link_type(m["dev"])}
    m = _LINK_UPDOWN.search(msg)
    if m:
        return "ib_link", {"state": m["state"].lower(), "port": m["dev"], "link_type": _link_type(m["dev"])}
    return None


def classify_pcie(msg: str) -> Classified | None:
    """A PCIe AER error report (``corrected`` says whether hardware fixed it), or a link trained below the
    device's capability; else None."""
    if _DEGRADED.search(msg):
        return "pcie_error", {"pci": normalize_pci(msg), "corrected": True, "what": "link_degraded"}
    m = _AER.search(msg) or _PCIE_SEV.search(msg)
    if not m:
        return None
    src = _AER_SOURCE.search(msg)  # "AER: ... received: 0000:a1:00.0": the device that reported, not the port
    return "pcie_error", {"pci": normalize_pci(src.group(1) if src else msg),
                          "corrected": m["sev"].lower().startswith(("corrected", "multiple corrected"))}
