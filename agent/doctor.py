"""`warden doctor`'s checks: is this host ready to diagnose, replay and act? Each says ok, warn or fail, with a hint.

    config    the safety settings (approvers, policies, limits) and the live config parse and validate
    path      `warden` resolves on PATH (the README's commands assume it)
    slurm     the Slurm client commands exist and reach slurmctld (or the SSH login node is configured)
    prometheus  the live config's Prometheus answers /-/ready
    gateway   the gateway config loads; a remote gateway (WARDEN_GATEWAY_URL) answers and takes the key
    stores    $WARDEN_HOME is writable; each SQLite store that exists opens and passes quick_check
    policies  the Cedar policies load and validate against the schema

A check never changes anything: it reads files, runs read-only commands with a timeout and makes
GET requests. ``warn`` is what works for replay but not for a live cluster (no Slurm here); ``fail``
is what breaks a command that the user will run.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

__all__ = ["CheckResult", "CHECKS", "run_checks"]

Status = Literal["ok", "warn", "fail"]
_TIMEOUT_S = 5.0


class CheckResult(BaseModel):
    """One line of the doctor's report."""

    check: str
    status: Status
    detail: str
    hint: str | None = None
    """What to do next (set for warn and fail)."""


def _one(text: object) -> str:
    return " ".join(str(text).split())[:300]


def _config() -> list[CheckResult]:
    from agent.live.config import default_config_path, load_live_config
    from agent.settings import WardenSettings, settings_path
    from tools.errors import WardenError

    out = []
    try:
        s = WardenSettings.load()
        s.validate_all()  # limits (and WARDEN_LIMIT_*), autonomy and fleet too
        where = str(settings_path()) if settings_path().exists() else f"{settings_path()} absent, defaults"
        if s.approvers:
            out.append(CheckResult(check="config", status="ok", detail=f"{where}: {len(s.approvers)} approver(s)"))
        else:
            out.append(CheckResult(check="config", status="warn", detail=f"{where}: no approvers",
                                   hint=f"nobody can approve irreversible actions; add `approvers: {{alice: [oncall]}}` "
                                        f"to {settings_path()}"))
    except WardenError as e:
        out.append(CheckResult(check="config", status="fail", detail=_one(e), hint="fix the named field"))
    path = default_config_path()
    if not path.exists():
        out.append(CheckResult(check="config", status="warn", detail=f"{path}: no live config",
                               hint="replay works without it; for --live write it (see agent/live/config.py) or run "
                                    "`warden sandbox up`"))
    else:
        try:
            cfg = load_live_config(path)
            out.append(CheckResult(check="config", status="ok", detail=f"{path}: cluster {cfg.cluster}, "
                                   f"Slurm via {cfg.slurm.via}"))
        except WardenError as e:
            out.append(CheckResult(check="config", status="fail", detail=_one(e), hint="fix the named field"))
    return out


def _path() -> list[CheckResult]:
    found = shutil.which("warden")
    if found:
        return [CheckResult(check="path", status="ok", detail=f"warden is {found}")]
    bindir = Path(sys.executable).parent
    return [CheckResult(check="path", status="warn", detail="warden is not on PATH",
                        hint=f"export PATH=\"{bindir}:$PATH\" (add it to ~/.bashrc to keep it)")]


def _slurm() -> list[CheckResult]:
    from agent.live.config import default_config_path, load_live_config
    from tools.errors import WardenError

    try:
        cfg = load_live_config(default_config_path()) if default_config_path().exists() else None
    except WardenError:
        cfg = None  # reported by the config check
    if cfg is not None and cfg.slurm.via == "ssh":
        return [CheckResult(check="slurm", status="ok", detail=f"through SSH to {cfg.slurm.user or ''}"
                            f"{'@' if cfg.slurm.user else ''}{cfg.slurm.host}:{cfg.slurm.port} (not probed here)")]
    missing = [c for c in ("squeue", "sinfo", "scontrol", "sacct") if not shutil.which(c)]
    if missing:
        status: Status = "fail" if cfg is not None else "warn"
        return [CheckResult(check="slurm", status=status, detail=f"not on PATH: {', '.join(missing)}",
                            hint="replay works without Slurm; for --live install the Slurm clients here, or set "
                                 "[slurm] via = \"ssh\" in warden.toml")]
    env = dict(os.environ)
    if cfg is not None and cfg.slurm.slurm_conf:
        env["SLURM_CONF"] = cfg.slurm.slurm_conf
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return [CheckResult(check="slurm", status="fail", detail=f"sinfo did not answer in {_TIMEOUT_S:g} s",
                            hint="is slurmctld up? try `scontrol ping`")]
    if proc.returncode != 0:
        return [CheckResult(check="slurm", status="fail" if cfg is not None else "warn",
                            detail=f"sinfo exited {proc.returncode}: {_one(proc.stderr)}",
                            hint="is slurmctld up and SLURM_CONF right? try `scontrol ping`")]
    parts = [p for p in proc.stdout.split() if p]
    return [CheckResult(check="slurm", status="ok", detail=f"sinfo answers: {len(parts)} partition(s)")]


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int | None, str]:
    import httpx

    try:
        r = httpx.get(url, headers=headers, timeout=_TIMEOUT_S)
        return r.status_code, r.text[:200]
    except httpx.HTTPError as e:
        return None, _one(e) or type(e).__name__


def _prometheus() -> list[CheckResult]:
    from agent.live.config import default_config_path, load_live_config
    from tools.errors import WardenError

    try:
        cfg = load_live_config(default_config_path()) if default_config_path().exists() else None
    except WardenError:
        cfg = None
    url = cfg.prometheus.url if cfg else None
    if not url:
        return [CheckResult(check="prometheus", status="warn", detail="no Prometheus configured",
                            hint="set [prometheus] url in warden.toml to read DCGM metrics live")]
    status, body = _get(url.rstrip("/") + "/-/ready")
    if status == 200:
        return [CheckResult(check="prometheus", status="ok", detail=f"{url} is ready")]
    return [CheckResult(check="prometheus", status="fail", detail=f"{url}: {status or body}",
                        hint="check [prometheus] url in warden.toml and that Prometheus runs")]


def _gateway() -> list[CheckResult]:
    from agent.gateway_keys import default_gateway_config
    from gateway.config import load_config
    from gateway.errors import GatewayError

    out = []
    path = default_gateway_config()
    if path.exists():
        try:
            cfg = load_config(path)
            out.append(CheckResult(check="gateway", status="ok", detail=f"{path}: aliases "
                                   f"{', '.join(sorted(cfg.routes))}; {len(cfg.keys)} key(s)"))
        except GatewayError as e:
            out.append(CheckResult(check="gateway", status="fail", detail=_one(e), hint="fix the named field"))
    url = os.environ.get("WARDEN_GATEWAY_URL")
    if not url:
        out.append(CheckResult(check="gateway", status="ok", detail="in-process (WARDEN_GATEWAY_URL unset)"))
        return out
    base = url.rstrip("/")
    status, body = _get(base.removesuffix("/v1") + "/healthz")
    if status != 200:
        out.append(CheckResult(check="gateway", status="fail", detail=f"{url}: {status or body}",
                               hint="start it with `warden gateway serve`, or unset WARDEN_GATEWAY_URL"))
        return out
    key = os.environ.get("WARDEN_GATEWAY_KEY")
    status, body = _get(base + "/models", {"Authorization": f"Bearer {key}"} if key else None)
    if status in (401, 403):
        out.append(CheckResult(check="gateway", status="fail", detail=f"{url} refuses the key ({status})",
                               hint="set WARDEN_GATEWAY_KEY to a key from `warden gateway keys create NAME`"))
    elif status == 200:
        out.append(CheckResult(check="gateway", status="ok", detail=f"{url} answers and takes the key"))
    else:
        out.append(CheckResult(check="gateway", status="fail", detail=f"{url}/models: {status or body}",
                               hint="check the gateway's log"))
    return out


def _stores() -> list[CheckResult]:
    from agent.store import warden_home

    home = warden_home()
    out = []
    try:
        home.mkdir(parents=True, exist_ok=True)
        probe = home / ".doctor-probe"
        probe.write_text("ok")
        probe.unlink()
        out.append(CheckResult(check="stores", status="ok", detail=f"{home} is writable"))
    except OSError as e:
        out.append(CheckResult(check="stores", status="fail", detail=f"{home}: {e.strerror or e}",
                               hint="set WARDEN_HOME to a directory you can write"))
        return out
    for name in ("warden.db", "audit.db", "approvals.db", "gateway.db"):
        path = home / name
        if not path.exists():
            continue
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=_TIMEOUT_S)
            try:
                result = conn.execute("pragma quick_check").fetchone()[0]
            finally:
                conn.close()
        except sqlite3.Error as e:
            result = _one(e)
        if result == "ok":
            out.append(CheckResult(check="stores", status="ok", detail=f"{path}: ok"))
        else:
            out.append(CheckResult(check="stores", status="fail", detail=f"{path}: {result}",
                                   hint="move the file aside (Warden creates a new one); keep it for the audit trail"))
    return out


def _policies() -> list[CheckResult]:
    from agent.settings import WardenSettings
    from policies import PolicyError
    from tools.errors import WardenError

    try:
        WardenSettings.load().engine()
    except WardenError:
        return []  # reported by the config check
    except PolicyError as e:
        return [CheckResult(check="policies", status="fail", detail=_one(e),
                            hint="fix the policy file named, or empty policy_paths for the bundled policy")]
    return [CheckResult(check="policies", status="ok", detail="the Cedar policies load and validate")]


CHECKS: dict[str, Callable[[], list[CheckResult]]] = {
    "config": _config, "path": _path, "slurm": _slurm, "prometheus": _prometheus, "gateway": _gateway,
    "stores": _stores, "policies": _policies,
}


def run_checks(only: list[str] | None = None) -> list[CheckResult]:
    """Run the named checks (default: all, in :data:`CHECKS` order).

    Raises:
        ValueError: an unknown check name.
    """
    names = only or list(CHECKS)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}; known: {', '.join(CHECKS)}")
    return [r for n in names for r in CHECKS[n]()]
