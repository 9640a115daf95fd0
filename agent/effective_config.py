"""Warden's effective configuration, value by value, with where each value came from.

Sources, in the order Warden applies them: a built-in ``default``, a file (``$WARDEN_HOME/config.yaml``
for safety settings and loop limits, ``$WARDEN_HOME/warden.toml`` for the live cluster,
``$WARDEN_HOME/gateway.toml`` for the gateway served by ``warden gateway serve``), then the
environment (``env WARDEN_...``). Secrets are never shown: a key is reported as set or not.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, JsonValue

__all__ = ["Setting", "effective_config"]


class Setting(BaseModel):
    """One effective value."""

    key: str
    """Dotted name, e.g. ``limits.wall_time_s``, ``live.slurm.via``."""
    value: JsonValue
    source: str
    """``default``, ``env NAME``, a file path, or ``derived from home`` (a path under $WARDEN_HOME)."""
    note: str | None = None


def _env_or(name: str, default: Any, default_source: str = "default") -> tuple[Any, str]:
    v = os.environ.get(name)
    return (v, f"env {name}") if v not in (None, "") else (default, default_source)


def _home(out: list[Setting]) -> Path:
    from agent.store import warden_home

    home = warden_home()
    src = "env WARDEN_HOME" if os.environ.get("WARDEN_HOME") else "default (the user state directory)"
    out.append(Setting(key="home", value=str(home), source=src, note="run store, audit log, approvals, configs"))
    return home


def _settings(out: list[Setting]) -> None:
    import yaml

    from agent.settings import WardenSettings, settings_path

    path = settings_path()
    s = WardenSettings.load()  # validates (first: a file it refuses is never parsed here); ConfigError names it
    raw: dict[str, Any] = {}
    if path.exists():
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    here = str(path)
    out.append(Setting(key="settings_file", value=here, source="derived from home",
                       note=None if path.exists() else "absent: every safety setting is its default"))
    for name in ("approvers", "approval_ttl_s", "policy_paths", "policy_config"):
        value = getattr(s, name)
        shown: JsonValue = [str(p) for p in value] if name == "policy_paths" else (
            str(value) if isinstance(value, Path) else value)
        note = "nobody can approve: add approvers to the settings file" if name == "approvers" and not value else None
        if name == "policy_paths" and not value:
            note = "the bundled policy (policies/*.cedar)"
        out.append(Setting(key=name, value=shown, source=here if name in raw else "default", note=note))
    for section in ("autonomy", "fleet"):
        model = getattr(s, section)
        given = raw.get(section) or {}
        for name in type(model).model_fields:
            value = getattr(model, name)
            shown = value if isinstance(value, (str, int, float, bool, type(None))) else \
                (list(value) if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value) else
                 [v.model_dump(mode="json") if isinstance(v, BaseModel) else v for v in value]
                 if isinstance(value, (list, tuple)) else str(value))
            out.append(Setting(key=f"{section}.{name}", value=shown, source=here if name in given else "default"))
    anchor = s.audit_anchor
    out.append(Setting(key="audit_anchor", value=anchor.sinks() if anchor else [],
                       source=here if "audit_anchor" in raw else "default",
                       note=None if anchor else "none: `warden audit verify` cannot tell a replaced or truncated log"))
    limits = s.limits
    file_limits = raw.get("limits") or {}
    for name in type(limits).model_fields:
        env = f"WARDEN_LIMIT_{name.upper()}"
        src = here if name in file_limits else (f"env {env}" if os.environ.get(env) else "default")
        value = getattr(limits, name)
        out.append(Setting(key=f"limits.{name}", value=list(value) if isinstance(value, tuple) else value, source=src))
    inputs, file_inputs = s.inputs, raw.get("inputs") or {}
    for name in type(inputs).model_fields:
        env = f"WARDEN_INPUT_{name.upper()}"
        src = here if name in file_inputs else (f"env {env}" if os.environ.get(env) else "default")
        out.append(Setting(key=f"inputs.{name}", value=getattr(inputs, name), source=src))


def _live(out: list[Setting]) -> None:
    from agent.live.config import default_config_path, load_live_config

    path = default_config_path()
    if not path.exists():
        out.append(Setting(key="live_config", value=str(path), source="derived from home",
                           note="absent: replay works; --live needs it (or `warden sandbox up`)"))
        return
    cfg = load_live_config(path)
    out.append(Setting(key="live_config", value=str(path), source="derived from home"))
    raw = cfg.model_dump(mode="json", exclude_unset=True)
    for key, value in (("cluster", cfg.cluster), ("slurm.via", cfg.slurm.via), ("slurm.host", cfg.slurm.host),
                       ("slurm.source", cfg.slurm.source), ("prometheus.url", cfg.prometheus.url),
                       ("kernel_logs.kind", cfg.kernel_logs.kind)):
        head, _, tail = key.partition(".")
        given = head in raw and (not tail or tail in (raw[head] or {}))
        out.append(Setting(key=f"live.{key}", value=value, source=str(path) if given else "default"))


def _gateway(out: list[Setting]) -> None:
    from agent.gateway_keys import default_gateway_config
    from gateway.config import default_config, load_config

    url, src = _env_or("WARDEN_GATEWAY_URL", "in-process")
    out.append(Setting(key="gateway.url", value=url, source=src,
                       note=None if url != "in-process" else "diagnose/act/eval call the gateway inside the process"))
    key_set = bool(os.environ.get("WARDEN_GATEWAY_KEY"))
    out.append(Setting(key="gateway.key", value="set (hidden)" if key_set else "unset",
                       source="env WARDEN_GATEWAY_KEY" if key_set else "default"))
    path = default_gateway_config()
    cfg = load_config(path) if path.exists() else default_config()
    src = str(path) if path.exists() else "default"
    out.append(Setting(key="gateway.config", value=str(path), source="derived from home",
                       note=None if path.exists() else "absent: `gateway serve` offers the built-in model only"))
    out.append(Setting(key="gateway.aliases", value=sorted(cfg.routes), source=src))
    out.append(Setting(key="gateway.keys", value=[k.name for k in cfg.keys], source=src,
                       note="open to every caller" if not cfg.keys else None))


def _stores(out: list[Setting], home: Path) -> None:
    for key, name, what in (("store.runs", "warden.db", "runs, tool calls, findings, plans"),
                            ("store.audit", "audit.db", "hash-chained audit log"),
                            ("store.approvals", "approvals.db", "approvals and paused runs"),
                            ("store.gateway", "gateway.db", "gateway ledger and cache")):
        path = home / name
        out.append(Setting(key=key, value=str(path), source="derived from home",
                           note=what + ("" if path.exists() else " (not created yet)")))
    debug, src = _env_or("WARDEN_DEBUG", "off")
    out.append(Setting(key="debug", value=debug, source=src, note="tracebacks on errors when set"))


def effective_config() -> list[Setting]:
    """Every effective value with its source.

    Raises:
        ConfigError (tools.errors) / gateway.errors.ConfigError: a config file is invalid (file and field named).
    """
    out: list[Setting] = []
    home = _home(out)
    _settings(out)
    _live(out)
    _gateway(out)
    _stores(out, home)
    return out
