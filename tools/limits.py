"""Caps on how much of one input Warden reads, so any input costs bounded work (issue 15 item 6).

A 50 MB kernel log, a 1M-line job_stats file or a 200k-entry manifest each took minutes and
gigabytes; the caps below keep a file to what its parser handles in seconds. What a cap cuts is
never silent: the caller records it as unreadable evidence of kind ``cut`` (how much was read of
how much), or, for a file that cannot be cut without changing its meaning, refuses it.

Three ways a format is cut:

    tail     line logs (kernel-log, job-log): the newest lines are kept (a log's end is where a
             failure is), from a line boundary
    entries  lctl job_stats: the first entries are kept, cut before a ``- job_id:`` line
    refuse   everything else (scheduler views, JSON, Prometheus pages): a document cut in the
             middle would parse as something else, so a file over the cap is not read

Every cap is set in Warden's config file (``inputs:`` in ``$WARDEN_HOME/config.yaml``, e.g.
``inputs: {log_max_lines: 500000}``) or by an environment variable ``WARDEN_INPUT_<FIELD>``
(``WARDEN_INPUT_LOG_MAX_LINES=500000``); the file wins, the environment fills what it leaves out, as
for the loop limits. A bad value is a ConfigError naming the file and field, or the variable.
``tools/`` does not know where that file lives: the agent layer installs a loader for it with
:func:`use_config_file` (agent/settings.py does so when imported); without one only the environment
counts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tools.errors import ConfigError

__all__ = ["ENV_PREFIX", "InputLimits", "input_limits", "limits_from", "use_config_file", "cut_mode", "bounded", "MiB"]

MiB = 1024 * 1024
CutMode = Literal["tail", "entries", "refuse"]

_TAIL = frozenset({"kernel-log", "job-log"})
_ENTRIES = frozenset({"lctl-job-stats"})


ENV_PREFIX = "WARDEN_INPUT_"


class InputLimits(BaseModel):
    """Per-file caps (bytes and lines) and the manifest's entry cap; ``inputs:`` in config.yaml or
    ``WARDEN_INPUT_*`` sets each."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    log_max_bytes: int = Field(default=8 * MiB, ge=4096, le=1024 * MiB)
    """A kernel or job log: bytes read from its end."""
    log_max_lines: int = Field(default=50_000, ge=100, le=10_000_000)
    """A kernel or job log: lines kept from its end."""
    job_stats_max_lines: int = Field(default=50_000, ge=100, le=10_000_000)
    """lctl job_stats: lines kept from its start (whole entries; about 2,800 jobs of MDT stats)."""
    max_file_bytes: int = Field(default=512 * MiB, ge=4096, le=16 * 1024 * MiB)
    """Any other file: larger ones are not read (a 100,000-job ``scontrol show job`` is about 45 MB)."""
    max_manifest_entries: int = Field(default=100_000, ge=1, le=10_000_000)
    """Files one snapshot may list (a generated 10,000-node snapshot lists about 20,000)."""


ConfigLoader = Callable[[], "tuple[str, Mapping[str, Any] | None] | None"]
"""Returns (the config file's name, its ``inputs:`` mapping or None), or None when there is no file."""

_loader: ConfigLoader | None = None


def use_config_file(loader: ConfigLoader | None) -> None:
    """Install where the config file's ``inputs:`` come from (None: the environment only).

    The loader is called on every :func:`input_limits`, so it should be cheap when the file is
    unchanged (agent/settings.py keys its cache on the file's mtime and size).
    """
    global _loader
    _loader = loader


def limits_from(values: Mapping[str, Any] | None, source: str | None = None,
                env: Mapping[str, str] | None = None) -> InputLimits:
    """The caps for the ``inputs:`` mapping of a config file (``source`` names it), the
    ``WARDEN_INPUT_*`` variables of ``env`` (default: the environment) filling what it leaves out.

    Raises:
        ConfigError: a value out of range or an unknown key (``<source>: inputs.<field>: ...``), or a bad
            or unknown ``WARDEN_INPUT_*`` variable (named: a misspelt cap is not silently ignored).
    """
    values = dict(values or {})
    if not all(isinstance(k, str) for k in values):  # YAML allows `1: 2`
        raise ConfigError(f"{source or 'config'}: inputs: keys must be field names")
    from_env: dict[str, str] = {}
    for name, value in (os.environ if env is None else env).items():
        if not name.startswith(ENV_PREFIX):
            continue
        field = name[len(ENV_PREFIX):].lower()
        if field not in InputLimits.model_fields:
            known = ", ".join(ENV_PREFIX + f.upper() for f in InputLimits.model_fields)
            raise ConfigError(f"{name}: not an input cap (one of {known})")
        from_env[field] = value
    try:
        return InputLimits(**{**from_env, **values})
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(map(str, err["loc"]))
        if field in values or field not in from_env:
            raise ConfigError(f"{source or 'config'}: inputs.{field or '<root>'}: {err['msg']}") from None
        raise ConfigError(f"{ENV_PREFIX}{field.upper()}: {err['msg']}") from None


@lru_cache(maxsize=4)
def _cached(env_key: tuple[tuple[str, str], ...], source: str | None, values_json: str) -> InputLimits:
    return limits_from(json.loads(values_json), source, dict(env_key))


def input_limits() -> InputLimits:
    """The caps in force: the config file's ``inputs:`` (when a loader is installed), then
    ``WARDEN_INPUT_*``; read again when either changes.

    Raises:
        ConfigError: a value is not a number in its range (names the file and field, or the variable).
    """
    found = _loader() if _loader is not None else None
    source, values = found if found else (None, None)
    if values is not None and not isinstance(values, Mapping):
        raise ConfigError(f"{source}: inputs: must be a mapping of field: value")
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIX)))
    return _cached(env, source, json.dumps(values or {}, sort_keys=True, default=str))


def cut_mode(fmt: str) -> CutMode:
    """How a file of format ``fmt`` is cut when over its cap (module docstring)."""
    return "tail" if fmt in _TAIL else "entries" if fmt in _ENTRIES else "refuse"


def byte_cap(fmt: str, limits: InputLimits) -> int:
    """Bytes of a ``fmt`` file read at most (for ``tail``: from its end)."""
    return limits.log_max_bytes if fmt in _TAIL else limits.max_file_bytes


def _size(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n:,} bytes"


def bounded(fmt: str, data: bytes, total_bytes: int, limits: InputLimits) -> tuple[bytes, str | None]:
    """``data`` (a file's bytes: all of it, or for ``tail`` formats its last ``byte_cap`` bytes of
    ``total_bytes``) cut to the caps; the reason when something was cut, else None.

    Raises:
        ValueError: a ``refuse`` format over its byte cap (the message says how large and the cap).
    """
    mode = cut_mode(fmt)
    cap = byte_cap(fmt, limits)
    if mode == "refuse":
        if total_bytes > cap:
            raise ValueError(f"not read: {_size(total_bytes)}, over the {_size(cap)} cap for one file "
                             "(inputs.max_file_bytes, WARDEN_INPUT_MAX_FILE_BYTES)")
        return data, None
    if mode == "tail":
        cut_bytes = total_bytes > len(data)
        if cut_bytes:  # started mid-line: drop the partial first line
            nl = data.find(b"\n")
            data = data[nl + 1:] if nl >= 0 else b""
        lines = data.splitlines(keepends=True)  # at most log_max_bytes: cheap
        if len(lines) > limits.log_max_lines:
            data = b"".join(lines[-limits.log_max_lines:])
            return data, (f"cut: read the last {limits.log_max_lines:,} lines ({_size(len(data))} of "
                          f"{_size(total_bytes)}); older lines were not read (inputs.log_max_lines, WARDEN_INPUT_LOG_MAX_LINES)")
        if cut_bytes:
            return data, (f"cut: read the last {_size(len(data))} of {_size(total_bytes)}; older lines were not "
                          "read (inputs.log_max_bytes, WARDEN_INPUT_LOG_MAX_BYTES)")
        return data, None
    # entries (job_stats): the first entries that fit, cut before an entry's first line
    if total_bytes > cap:
        raise ValueError(f"not read: {_size(total_bytes)}, over the {_size(cap)} cap for one file "
                         "(inputs.max_file_bytes, WARDEN_INPUT_MAX_FILE_BYTES)")
    keep = limits.job_stats_max_lines
    idx = -1
    for _ in range(keep):
        idx = data.find(b"\n", idx + 1)
        if idx < 0:
            return data, None  # fewer lines than the cap
    if idx + 1 >= len(data):
        return data, None
    head = data[:idx + 1]
    start = head.rfind(b"\n- job_id:")
    head = head[:start + 1] if start >= 0 else head
    entries = head.count(b"\n- job_id:") + head.startswith(b"- job_id:")
    total = data.count(b"\n- job_id:") + data.startswith(b"- job_id:")
    return head, (f"cut: read the first {entries:,} of {total:,} job_stats entries ({_size(len(head))} of "
                  f"{_size(total_bytes)}) (inputs.job_stats_max_lines, WARDEN_INPUT_JOB_STATS_MAX_LINES)")
