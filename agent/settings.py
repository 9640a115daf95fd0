"""Warden's safety settings: who may approve, how long approvals live, which policies and limits.

Read from ``$WARDEN_HOME/config.yaml`` when it exists (``yaml.safe_load``, validated, never
evaluated); every field has a default. The audit log and the approval store live next to the run
store, under ``$WARDEN_HOME``::

    # $WARDEN_HOME/config.yaml
    approvers:                 # user -> groups (the policy needs oncall or admins)
      alice: [oncall]
      bob: [admins]
    approval_ttl_s: 3600
    policy_paths: []           # *.cedar files or directories; empty = the default policy
    policy_config: null        # YAML of blast-radius limits (policies.PolicyConfig)
    limits: {model_requests: 8, wall_time_s: 300}   # wall_time_s bounds evidence reading too
    inputs: {log_max_lines: 50000, max_file_bytes: 536870912}   # per-file caps (tools/limits.py)
    asserted_identity: false   # true only behind a wrapper that authenticates --approver / --as
    autonomy: {default: recommend, rules: []}     # agent/autonomy.py
    fleet: {max_out_per_group: 3, window_h: 1}    # agent/fleet.py
    audit_anchor: {file: /var/log/warden/audit-anchors.jsonl}   # agent/audit_anchor.py
    audit_key_env: null        # a variable holding the audit chain's secret (else $WARDEN_HOME/audit.key)
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from agent.store import warden_home
from tools.errors import ConfigError
from tools.limits import InputLimits, limits_from, use_config_file

if TYPE_CHECKING:  # imported where used: `approvals list` and `audit verify` must start without the agent stack
    from agent.approvals import ApprovalStore
    from agent.audit import AuditLog
    from agent.audit_anchor import AnchorConfig
    from agent.autonomy import AutonomyConfig
    from agent.fleet import FleetBounds
    from agent.limits import LoopLimits
    from policies import PolicyEngine

__all__ = ["WardenSettings", "settings_path", "audit_path", "approvals_path"]


def settings_path() -> Path:
    """``$WARDEN_HOME/config.yaml``."""
    return warden_home() / "config.yaml"


def audit_path() -> Path:
    """The audit log: ``$WARDEN_HOME/audit.db``."""
    return warden_home() / "audit.db"


def approvals_path() -> Path:
    """Pending approvals and paused runs: ``$WARDEN_HOME/approvals.db``."""
    return warden_home() / "approvals.db"


class WardenSettings(BaseModel):
    """Safety settings (see the module docstring for the file format)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    approvers: dict[str, list[str]] = Field(default_factory=dict)
    """Allowed approvers and their groups; empty means nobody can approve (fail closed)."""
    approval_ttl_s: float = Field(default=3600.0, gt=0, le=30 * 86_400)
    """How long a pending approval stays valid, seconds (at most 30 days)."""
    policy_paths: list[Path] = Field(default_factory=list)
    policy_config: Path | None = None
    limits_raw: dict[str, Any] | None = Field(default=None, alias="limits")
    """The ``limits:`` mapping as written; read it as :attr:`limits` (validated on first use)."""
    inputs_raw: dict[str, Any] | None = Field(default=None, alias="inputs")
    """``inputs:`` as written (per-file caps, tools.limits.InputLimits); read it as :attr:`inputs`."""
    asserted_identity: bool = False
    """True only where the channel authenticates who runs Warden; then ``--approver``/``--as`` are taken."""
    autonomy_raw: dict[str, Any] | None = Field(default=None, alias="autonomy")
    """``autonomy:`` as written; read it as :attr:`autonomy`."""
    fleet_raw: dict[str, Any] | None = Field(default=None, alias="fleet")
    """``fleet:`` as written; read it as :attr:`fleet`."""
    slack_approvers: dict[str, str] = Field(default_factory=dict)
    """Slack user id (as Slack verified it on a signed request) -> approver name in ``approvers``."""
    approval_key_env: str | None = None
    """Environment variable holding the approvals' MAC secret (else ``$WARDEN_HOME/approval.key``, mode 0600)."""
    audit_key_env: str | None = None
    """Environment variable holding the audit chain's HMAC secret (else ``$WARDEN_HOME/audit.key``, mode 0600)."""
    audit_anchor_raw: dict[str, Any] | None = Field(default=None, alias="audit_anchor")
    """``audit_anchor:`` as written; read it as :attr:`audit_anchor`."""
    _source: Path | None = PrivateAttr(default=None)

    # The sections below are validated on first use: their models import the action catalogue (and
    # with it the Kubernetes client), which `approvals list` and `audit verify` must not pay for.
    # `warden doctor` and `warden config show` validate them all.

    def _section(self, name: str, model: type[BaseModel], raw: dict[str, Any] | None) -> Any:
        try:
            return model.model_validate(raw or {})
        except ValidationError as e:
            err = e.errors()[0]
            where = f"{self._source}: " if self._source else ""
            raise ConfigError(f"{where}{name}.{'.'.join(map(str, err['loc']))}: {err['msg']}") from None

    @cached_property
    def autonomy(self) -> AutonomyConfig:
        """Autonomy modes per node group (observe | recommend | execute); agent.autonomy.AutonomyConfig.

        Raises:
            ConfigError: naming the file and the field when a value is invalid.
        """
        from agent.autonomy import AutonomyConfig

        return self._section("autonomy", AutonomyConfig, self.autonomy_raw)

    @cached_property
    def fleet(self) -> FleetBounds:
        """Fleet bounds (drains per group and window, disruptive actions per hour, cool-downs, caps).

        Raises:
            ConfigError: naming the file and the field when a value is invalid.
        """
        from agent.fleet import FleetBounds

        return self._section("fleet", FleetBounds, self.fleet_raw)

    @cached_property
    def audit_anchor(self) -> AnchorConfig | None:
        """Where ``warden audit anchor`` exports the audit log's head (agent.audit_anchor.AnchorConfig).

        Raises:
            ConfigError: naming the file and the field when a value is invalid, or the anchor file
                lies inside $WARDEN_HOME.
        """
        if self.audit_anchor_raw is None:
            return None
        from agent.audit_anchor import AnchorConfig, AnchorError, check_outside

        cfg = self._section("audit_anchor", AnchorConfig, self.audit_anchor_raw)
        try:
            check_outside(cfg, warden_home())
        except AnchorError as e:
            raise ConfigError(f"{self._source or settings_path()}: {e}") from None
        return cfg

    @property
    def inputs(self) -> InputLimits:
        """The per-file input caps (tools.limits.InputLimits; ``WARDEN_INPUT_*`` fills what the file leaves out).

        Raises:
            ConfigError: naming the file and the field (or the variable) when a value is invalid.
        """
        return limits_from(self.inputs_raw, str(self._source or settings_path()))

    def validate_all(self) -> None:
        """Validate the lazily read sections too (limits, inputs, autonomy, fleet, audit_anchor).

        Raises:
            ConfigError: naming the file and the field of the first invalid value.
        """
        self.limits, self.inputs, self.autonomy, self.fleet, self.audit_anchor  # noqa: B018 - each validates on first read

    @property
    def source(self) -> Path | None:
        """The file these settings were read from (None: no file, the defaults)."""
        return self._source

    @cached_property
    def limits(self) -> LoopLimits:
        """The loop limits (agent.limits.LoopLimits; ``WARDEN_LIMIT_*`` fills what the file leaves out).

        Raises:
            ConfigError: naming the file and the field when a value is invalid.
        """
        from agent.limits import LoopLimits  # pulls in pydantic-ai: only the commands that run the agent pay

        try:
            return LoopLimits(**(self.limits_raw or {}))
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(map(str, err["loc"]))
            where = f"{self._source}: limits." if self._source and field in (self.limits_raw or {}) else "WARDEN_LIMIT_"
            raise ConfigError(f"{where}{field if where.endswith('.') else field.upper()}: {err['msg']}") from None

    @classmethod
    def load(cls, path: Path | None = None) -> WardenSettings:
        """Read the settings file; a missing file gives the defaults.

        Raises:
            ConfigError: naming the file when it is not UTF-8 YAML or fails validation.
        """
        p = path or settings_path()
        if not p.exists():
            return cls()
        try:
            raw = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        except RecursionError:
            raise ConfigError(f"{p}: cannot read Warden settings: nested too deeply") from None
        except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError) as e:  # ValueError: a 5,000-digit integer
            raise ConfigError(f"{p}: cannot read Warden settings: {' '.join(str(e).split())[:200]}") from None
        try:
            settings = cls.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            raise ConfigError(f"{p}: {'.'.join(map(str, err['loc'])) or '<root>'}: {err['msg']}") from None
        settings._source = p
        return settings

    def groups_of(self, user: str) -> list[str]:
        """The configured groups of an approver ([] for anyone else)."""
        return list(self.approvers.get(user, []))

    def engine(self) -> PolicyEngine:
        """The policy engine (raises PolicyError on any invalid policy or config; never falls back)."""
        from policies import PolicyEngine

        return PolicyEngine.load(self.policy_paths or None, self.policy_config)

    def audit_key(self) -> bytes | None:
        """The audit chain's secret from ``audit_key_env``; None: the key file beside audit.db.

        Raises:
            ConfigError: the variable is unset or too short (names the field).
        """
        if not self.audit_key_env:
            return None
        from agent.keys import KeyFileError, key_from_env

        try:
            return key_from_env(self.audit_key_env, field=f"{self._source or settings_path()}: audit_key_env")
        except KeyFileError as e:
            raise ConfigError(str(e)) from None

    def open_audit(self, *, create: bool = True) -> AuditLog:
        """The audit log under $WARDEN_HOME (created with its key if missing, unless ``create`` is False).

        Raises:
            ConfigError: audit_key_env names an unset variable. AuditStoreError / KeyFileError: see AuditLog.
        """
        from agent.audit import AuditLog

        if create:
            audit_path().parent.mkdir(parents=True, exist_ok=True)
        return AuditLog(audit_path(), key=self.audit_key(), create=create)

    def open_approvals(self, audit: AuditLog | None = None) -> ApprovalStore:
        """The approval store under $WARDEN_HOME, recording into ``audit``."""
        from agent.approvals import ApprovalStore

        approvals_path().parent.mkdir(parents=True, exist_ok=True)
        key = None
        if self.approval_key_env:
            secret = os.environ.get(self.approval_key_env, "")
            if len(secret) < 16:
                raise ConfigError(f"{settings_path()}: approval_key_env: ${self.approval_key_env} is unset or "
                                  "shorter than 16 characters")
            key = secret.encode()
        return ApprovalStore(approvals_path(), allowed_approvers=self.approvers, audit=audit, key=key)


_inputs_seen: dict[tuple[str, int, int], dict[str, Any] | None] = {}


def _inputs_from_file() -> tuple[str, dict[str, Any] | None] | None:
    """``inputs:`` of $WARDEN_HOME/config.yaml for tools.limits (read again only when the file changes)."""
    p = settings_path()
    try:
        st = p.stat()
    except OSError:
        return None
    key = (str(p), st.st_mtime_ns, st.st_size)
    if key not in _inputs_seen:
        _inputs_seen.clear()
        _inputs_seen[key] = WardenSettings.load(p).inputs_raw
    return str(p), _inputs_seen[key]


use_config_file(_inputs_from_file)  # every snapshot or live read under the agent honours config.yaml's caps
