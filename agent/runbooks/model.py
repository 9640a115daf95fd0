"""Runbooks: YAML files that say which alerts Warden investigates, how, and where it posts.

Read from ``$WARDEN_HOME/runbooks/*.yaml`` and the bundled examples in the repository's
``runbooks/`` (a file in $WARDEN_HOME with the same ``name`` replaces the bundled one). Each file is
one runbook, loaded with ``yaml.safe_load`` and validated; nothing in it is evaluated::

    name: gpu-xid                       # unique; [a-z0-9-]
    match: {alertname: WardenGpuXid}    # every label equal (first matching runbook wins)
    match_re: {severity: "page|critical"}   # every label fully matching the regular expression
    read: [slurm, prometheus, kernel_logs, job_logs]   # evidence families to collect (default: all)
    question: "GPU errors on $nodes ($count nodes, alert $alertname). Why, and what should be done?"
    autonomy: recommend                 # observe | recommend | execute (never above config.yaml's)
    post:                               # one or more
      - {slack: C0ONCALL}               # a channel id (Block Kit, buttons for approvals)
      - {webhook: "https://hooks.example.org/warden"}   # JSON POST
      - {file: alerts.jsonl}            # JSON lines; relative paths are under $WARDEN_HOME/posts/
    cooldown_s: 3600                    # the same node and condition is not re-investigated sooner
    group_by: [alertname]               # alerts with equal values of these labels are one investigation
    node_labels: [node, instance, Hostname]   # where an alert names its node (first present)
    requester: warden-oncall            # on whose behalf plans are proposed (cannot approve its own irreversible ones)
    images: true                        # Slack posts: the report's heat map and timeline uploaded in the thread

The question is a ``string.Template``: ``$node`` (first node), ``$nodes`` (up to 20, comma-separated),
``$count``, ``$alertname``, ``$summary`` (the first alert's annotation) and ``$label_<name>`` for the
group's labels. Alert text is untrusted: each value is made one printable line and cut short.
Errors name the file and the field: ``runbooks/gpu.yaml: post.0.slack: String should match ...``.
"""

from __future__ import annotations

import re
from pathlib import Path
from string import Template

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from agent.autonomy import Mode
from agent.render.safe import clean_line
from agent.runbooks.target import Family
from agent.store import warden_home
from gateway.config import BUILTIN_MODEL
from tools.errors import ConfigError

__all__ = ["Post", "Runbook", "bundled_dir", "home_dir", "load_runbook", "load_runbooks"]

_NAME = r"^[a-z0-9][a-z0-9-]{0,62}$"
_FIELDS = ("node", "nodes", "count", "alertname", "summary")


class Post(BaseModel):
    """One destination: exactly one of ``slack`` (channel id), ``webhook`` (URL) or ``file`` (path)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    slack: str | None = Field(default=None, pattern=r"^[CGD][A-Z0-9]{2,20}$|^#[a-z0-9_-]{1,80}$")
    webhook: str | None = Field(default=None, pattern=r"^https?://\S+$", max_length=2000)
    file: Path | None = None

    @model_validator(mode="after")
    def _one(self) -> Post:
        if sum(x is not None for x in (self.slack, self.webhook, self.file)) != 1:
            raise ValueError("give exactly one of slack, webhook or file")
        return self

    def describe(self) -> str:
        """``slack:C0ONCALL``, ``webhook:https://…`` or ``file:/path``."""
        return f"slack:{self.slack}" if self.slack else f"webhook:{self.webhook}" if self.webhook else f"file:{self.file}"


class Runbook(BaseModel):
    """One runbook (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=_NAME)
    match: dict[str, str] = Field(default_factory=dict)
    match_re: dict[str, str] = Field(default_factory=dict)
    read: list[Family] | None = None
    question: str = Field(min_length=1, max_length=2000)
    autonomy: Mode = "recommend"
    post: list[Post] = Field(min_length=1, max_length=10)
    cooldown_s: float = Field(default=3600.0, ge=0, le=7 * 86400)
    group_by: list[str] = Field(default_factory=lambda: ["alertname"], max_length=10)
    node_labels: list[str] = Field(default_factory=lambda: ["node", "instance", "Hostname", "hostname", "nodename"])
    requester: str = Field(default="warden-oncall", min_length=1, max_length=64)
    model: str = BUILTIN_MODEL
    images: bool = True
    """Slack posts: upload the report's GPU heat map and evidence timeline into the message's thread."""
    _source: Path | None = PrivateAttr(default=None)
    _compiled: dict[str, re.Pattern[str]] = PrivateAttr(default_factory=dict)

    @field_validator("match_re")
    @classmethod
    def _regexes(cls, v: dict[str, str]) -> dict[str, str]:
        for label, rx in v.items():
            try:
                re.compile(rx)
            except re.error as e:
                raise ValueError(f"{label}: not a regular expression: {e}") from None
        return v

    @model_validator(mode="after")
    def _needs_a_matcher(self) -> Runbook:
        if not self.match and not self.match_re:
            raise ValueError("give match or match_re: a runbook that matches every alert is a mistake")
        t = Template(self.question)
        if not t.is_valid():
            raise ValueError("question: a $ must start a field ($node, $nodes, $count, $alertname, $summary, "
                             "$label_<name>) or be written $$")
        unknown = [f for f in t.get_identifiers() if f not in _FIELDS and not f.startswith("label_")]
        if unknown:
            raise ValueError(f"question: unknown field ${unknown[0]} (known: {', '.join('$' + f for f in _FIELDS)}, "
                             "$label_<name>)")
        return self

    @property
    def source(self) -> Path | None:
        """The file this runbook was read from."""
        return self._source

    def matches(self, labels: dict[str, str]) -> bool:
        """True when every ``match`` label is equal and every ``match_re`` label fully matches."""
        if any(labels.get(k) != v for k, v in self.match.items()):
            return False
        for k, rx in self.match_re.items():
            pat = self._compiled.get(k) or self._compiled.setdefault(k, re.compile(rx))
            if k not in labels or not pat.fullmatch(labels[k]):
                return False
        return True

    def node_of(self, labels: dict[str, str]) -> str | None:
        """The node an alert names (``instance`` loses its ``:port``), or None."""
        for key in self.node_labels:
            v = labels.get(key)
            if v:
                return v.rsplit(":", 1)[0] if key == "instance" and re.search(r":\d+$", v) else v
        return None

    def question_for(self, nodes: list[str], alertname: str, labels: dict[str, str], summary: str,
                     count: int) -> str:
        """The question, its ``$`` fields filled with (cleaned, cut) alert values."""
        def c(s: str, n: int = 120) -> str:
            return " ".join(clean_line(str(s)).split())[:n]

        fields = {f"label_{re.sub(r'[^A-Za-z0-9_]', '_', k)}": c(v) for k, v in labels.items()}
        fields.update(node=c(nodes[0]) if nodes else "the cluster", nodes=c(", ".join(nodes[:20]), 600) or "the cluster",
                      count=str(count), alertname=c(alertname), summary=c(summary, 300))
        return Template(self.question).safe_substitute(fields)


def bundled_dir() -> Path:
    """The repository's ``runbooks/`` (examples matching the sandbox's alert rules)."""
    return Path(__file__).resolve().parents[2] / "runbooks"


def home_dir() -> Path:
    """``$WARDEN_HOME/runbooks``."""
    return warden_home() / "runbooks"


def load_runbook(path: Path) -> Runbook:
    """Read and validate one runbook file.

    Raises:
        ConfigError: ``<file>: <field>: <reason>`` when it is not UTF-8 YAML or fails validation.
    """
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: cannot read runbook: {' '.join(str(e).split())}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a runbook is a YAML mapping (name, match, question, post, ...)")
    try:
        rb = Runbook.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(map(str, err["loc"])) or "<root>"
        raise ConfigError(f"{path}: {where}: {err['msg'].removeprefix('Value error, ')}") from None
    rb._source = path
    return rb


def load_runbooks(dirs: list[Path] | None = None) -> list[Runbook]:
    """Every runbook of ``dirs`` (default: $WARDEN_HOME/runbooks, then the bundled examples), in
    file-name order per directory; a later runbook with an earlier one's name is skipped.

    Raises:
        ConfigError: naming the first invalid file and field.
    """
    seen: dict[str, Runbook] = {}
    for d in dirs if dirs is not None else [home_dir(), bundled_dir()]:
        for path in sorted(Path(d).glob("*.yaml")) + sorted(Path(d).glob("*.yml")):
            rb = load_runbook(path)
            seen.setdefault(rb.name, rb)
    return list(seen.values())
