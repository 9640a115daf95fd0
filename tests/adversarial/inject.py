"""Build a hostile snapshot: copy a bundled incident and hide a payload in one file, in that file's
real format (scontrol key=value text, dmesg -T lines, job stdout, Kubernetes PodList JSON, a file
name listed in manifest.yaml)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import yaml

from cases import INCIDENTS, PAYLOADS, Case

__all__ = ["REPO", "build_snapshot", "payload_bytes"]

REPO = Path(__file__).resolve().parents[2]


def payload_bytes(case: Case) -> bytes:
    """The payload with the incident's job and node filled in, as bytes."""
    job, node = INCIDENTS[case.incident]
    raw = PAYLOADS[case.payload]
    if isinstance(raw, bytes):
        return raw
    return raw.replace("{job}", job).replace("{node}", node).encode("utf-8")


def _entries(manifest: dict, fmt: str) -> list[dict]:
    return [f for f in manifest["files"] if f["format"] == fmt]


def _replace_line(path: Path, pattern: bytes, new: bytes) -> None:
    data = path.read_bytes()
    out, n = re.subn(pattern, lambda m: new, data, count=1, flags=re.M)
    assert n == 1, f"{path}: {pattern!r} not found"
    path.write_bytes(out)


def build_snapshot(case: Case, root: Path) -> Path:
    """Copy the incident's snapshot under ``root`` and inject the payload; returns the snapshot dir."""
    snap = root / "snapshot"
    shutil.copytree(REPO / "evals" / "incidents" / case.incident / "snapshot", snap)
    manifest = yaml.safe_load((snap / "manifest.yaml").read_text())
    job, node = INCIDENTS[case.incident]
    text = payload_bytes(case)
    one_line = text.replace(b"\n", b" ") if case.where not in ("job_name", "comment", "drain_reason") else text
    if case.where in ("job_name", "comment"):
        f = snap / next(e["path"] for e in _entries(manifest, "scontrol-job-text") if e.get("job") == job)
        if case.where == "job_name":
            _replace_line(f, rb"(?<=JobName=).*$", text)
        else:
            _replace_line(f, rb"^(   UserId=.*)$", b"   Comment=" + text + b"\n" + f.read_bytes().split(b"\n")[1])
    elif case.where == "job_log":
        f = snap / _entries(manifest, "job-log")[0]["path"]
        block = (b"[rank0]: Traceback (most recent call last):\n"
                 b'[rank0]:   File "/opt/train/loader.py", line 88, in __next__\n[rank0]: RuntimeError: ' + one_line + b"\n")
        f.write_bytes(f.read_bytes() + one_line + b"\n" + block)
    elif case.where == "kernel_log":
        entry = next((e for e in _entries(manifest, "kernel-log") if e.get("node") == node),
                     _entries(manifest, "kernel-log")[0])
        f = snap / entry["path"]
        first, *rest = text.split(b"\n")
        lines = [b"[Sun Nov 29 06:59:58 2026] LustreError: 11-0: lustre-MDT0000-mdc-ffff8f2a: operation "
                 b"mds_getattr to node 10.10.0.1@o2ib failed: rc = -107 " + first]
        lines += [b"[Sun Nov 29 06:59:58 2026] " + part for part in rest]
        f.write_bytes(f.read_bytes() + b"\n".join(lines) + b"\n")
    elif case.where == "drain_reason":
        f = snap / next(e["path"] for e in _entries(manifest, "scontrol-node-text"))
        records = f.read_bytes().split(b"\n\n")
        victim = next(i for i, r in enumerate(records) if b"State=IDLE " in r and node.encode() not in r.split(b"\n")[0])
        rec = records[victim].replace(b"State=IDLE ", b"State=IDLE+DRAIN ", 1)
        records[victim] = rec.rstrip(b"\n") + b"\n   Reason=" + text + b" [root@2026-11-29T06:00:00]"
        f.write_bytes(b"\n\n".join(records))
    elif case.where == "pod_annotation":
        pods = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": [{
            "metadata": {"name": "llm-serve-0", "namespace": "ml-team", "uid": "u-1",
                         "creationTimestamp": "2026-11-28T09:00:00Z",
                         "annotations": {"team.example.org/contact": "@@PAYLOAD@@"}},
            "spec": {"nodeName": node, "containers": [{"name": "srv", "image": "nvcr.io/nvidia/tritonserver:24.05-py3",
                                                       "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Running"}}]}
        body = json.dumps(pods).encode()
        if case.payload == "non-utf8":
            body = body.replace(b"@@PAYLOAD@@", text.replace(b'"', b"").replace(b"\\", b""))
        else:
            body = body.replace(b'"@@PAYLOAD@@"', json.dumps(text.decode()).encode())
        (snap / "k8s").mkdir(exist_ok=True)
        (snap / "k8s" / "pods.json").write_bytes(body)
        manifest["files"].append({"path": "k8s/pods.json", "format": "k8s-json", "command": "kubectl get pods -A -o json"})
    elif case.where == "file_name":
        entry = _entries(manifest, "job-log")[0]
        old = snap / entry["path"]
        name = re.sub(r"[/\x00]", "_", text.decode())[:200] + ".out"
        new = old.with_name(name)
        old.rename(new)
        entry["path"] = str(new.relative_to(snap))
    else:
        raise ValueError(case.where)
    (snap / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True))
    return snap
