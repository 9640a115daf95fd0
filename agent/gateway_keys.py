"""The gateway's virtual keys in its config file: mint one, list them, revoke one.

A key is stored only as its SHA-256 (``[[keys]]`` with ``key_sha256``, see gateway.config); the key
itself is shown once, when it is created. The file is ``--config FILE`` or
``$WARDEN_HOME/gateway.toml`` (created with the built-in model's defaults when missing).

Edits keep the file a person wrote: a new key is appended as a ``[[keys]]`` table (comments and
layout stay), a revoked key's table is cut out of the text. Every edit is checked by parsing the
result with the gateway's own loader and comparing it with the intended config before the file is
replaced (atomically, mode 0600 for a new file); when the text cannot be edited that way (an inline
``keys = [...]`` array, YAML), the file is rewritten from the parsed data and the caller is told that
comments were not kept.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from pathlib import Path

from pydantic import BaseModel

from agent.store import warden_home
from tools.errors import ConfigError

__all__ = ["KeyInfo", "KeyEdit", "default_gateway_config", "create_key", "list_keys", "revoke_key"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
_HEADER = "# Warden gateway config (see gateway/config.py); keys are stored as SHA-256 only.\n"


class KeyInfo(BaseModel):
    """One virtual key as configured (never the key itself)."""

    name: str
    team: str | None = None
    key_sha256: str
    rpm: int | None = None
    tpm: int | None = None
    tokens_per_day: int | None = None
    cost_per_day_usd: float | None = None


class KeyEdit(BaseModel):
    """What an edit did: the file, the key's record, the new key (create only) and whether comments survived."""

    path: Path
    info: KeyInfo
    key: str | None = None
    """The plaintext key; only from :func:`create_key`, shown once."""
    rewritten: bool = False
    """True when the file was rewritten from its data (comments and layout were not kept)."""


def default_gateway_config() -> Path:
    """``$WARDEN_HOME/gateway.toml``."""
    return warden_home() / "gateway.toml"


def _load(path: Path) -> dict:
    """The file's own data (as written, secrets included), after the gateway's loader accepted it."""
    from gateway.config import load_config  # validates exactly as the gateway will

    if not path.exists():
        return {}
    load_config(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        return tomllib.loads(text)
    import yaml

    return yaml.safe_load(text) or {}


def list_keys(path: Path | None = None) -> list[KeyInfo]:
    """The keys configured in ``path`` (default $WARDEN_HOME/gateway.toml); [] when it does not exist.

    Raises:
        gateway.errors.ConfigError: the file is not a valid gateway config (file and field named).
    """
    from gateway.config import load_config

    p = path or default_gateway_config()
    if not p.exists():
        return []
    return [KeyInfo(**k.model_dump(include=set(KeyInfo.model_fields))) for k in load_config(p).keys]


def _toml_value(v: object) -> str:
    import tomli_w

    return tomli_w.dumps({"v": v}).split("=", 1)[1].strip()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _verified(path: Path, text: str, expected_keys: list[dict]) -> bool:
    """Whether ``text`` parses as a gateway config holding exactly ``expected_keys`` (by hash, in order)."""
    from gateway.config import GatewayConfig

    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else None
        if data is None:
            return False
        cfg = GatewayConfig.model_validate(data)
    except (tomllib.TOMLDecodeError, ValueError):
        return False
    return [k.key_sha256 for k in cfg.keys] == [k["key_sha256"] for k in expected_keys]


def _rewrite(path: Path, data: dict) -> str:
    if path.suffix == ".toml":
        import tomli_w

        return _HEADER + tomli_w.dumps(data)
    import yaml

    return yaml.safe_dump(data, sort_keys=False)


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise ConfigError(f"key name {name!r}: use 1-64 letters, digits, '_', '.', '@' or '-'")


def create_key(name: str, *, team: str | None = None, rpm: int | None = None, tpm: int | None = None,
               tokens_per_day: int | None = None, cost_per_day_usd: float | None = None,
               path: Path | None = None) -> KeyEdit:
    """Mint a key named ``name`` and add its hash to the gateway config.

    Raises:
        ConfigError: a bad name, a name already used, or a team the config does not define.
        gateway.errors.ConfigError: the existing file is invalid.
    """
    from gateway.budgets import generate_key

    _check_name(name)
    p = path or default_gateway_config()
    data = _load(p)
    keys = list(data.get("keys", []))
    if any(k["name"] == name for k in keys):
        raise ConfigError(f"{p}: a key named {name!r} exists; revoke it first (warden gateway keys revoke {name})")
    teams = {t["name"] for t in data.get("teams", [])}
    if team is not None and teams and team not in teams:
        raise ConfigError(f"{p}: team {team!r} is not in [[teams]] ({', '.join(sorted(teams))})")
    plaintext, digest = generate_key()
    entry = {k: v for k, v in {"name": name, "team": team, "key_sha256": digest, "rpm": rpm, "tpm": tpm,
                               "tokens_per_day": tokens_per_day, "cost_per_day_usd": cost_per_day_usd}.items()
             if v is not None}
    old = p.read_text(encoding="utf-8") if p.exists() else _HEADER
    block = "\n[[keys]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in entry.items())
    text = old.rstrip("\n") + "\n" + block
    rewritten = False
    if not _verified(p, text, keys + [entry]):
        text, rewritten = _rewrite(p, {**data, "keys": keys + [entry]}), p.exists()
    _write(p, text)
    _load(p)  # what the gateway will read back
    return KeyEdit(path=p, info=KeyInfo(**entry), key=plaintext, rewritten=rewritten)


_TABLE = re.compile(r"^\s*\[", re.MULTILINE)


def revoke_key(name: str, path: Path | None = None) -> KeyEdit:
    """Remove the key named ``name`` from the gateway config (a running gateway drops it on restart).

    Raises:
        ConfigError: no key of that name (the configured names are listed).
    """
    p = path or default_gateway_config()
    data = _load(p)
    keys = list(data.get("keys", []))
    gone = next((k for k in keys if k["name"] == name), None)
    if gone is None:
        names = ", ".join(k["name"] for k in keys) or "none"
        raise ConfigError(f"{p}: no key named {name!r} (configured: {names})")
    rest = [k for k in keys if k is not gone]
    text = p.read_text(encoding="utf-8")
    cuts = [m.start() for m in _TABLE.finditer(text)] + [len(text)]
    edited = None
    for start, end in zip(cuts, cuts[1:]):
        chunk = text[start:end]
        if chunk.lstrip().startswith("[[keys]]") and gone["key_sha256"] in chunk:
            edited = text[:start] + text[end:]
            break
    rewritten = False
    if edited is None or not _verified(p, edited, rest):
        edited, rewritten = _rewrite(p, {**data, "keys": rest}), True
    _write(p, edited)
    _load(p)
    return KeyEdit(path=p, info=KeyInfo(**gone), rewritten=rewritten)
