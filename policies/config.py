"""The policy config: blast-radius limits the Cedar policies compare against.

The limits are plain numbers, validated by pydantic and handed to Cedar as request context
(``context.max_partition_gpu_share_pct`` ...). They are data: the config is parsed with
``yaml.safe_load`` and never evaluated as code or spliced into policy text.

Example ``policy.yaml``::

    max_partition_gpu_share_pct: 25
    max_drains_per_partition_per_hour: 3
    max_running_gpu_hours_killed: 512
    max_other_users_jobs_touched: 10
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from policies.errors import PolicyConfigError

CEDAR_LONG_MAX = 2**63 - 1
"""Cedar's Long is 64-bit: a limit above it could not be put in the request (every action then
failed to evaluate and was denied as ``evaluation-error``)."""

__all__ = ["PolicyConfig"]


class PolicyConfig(BaseModel):
    """Blast-radius limits for the default policy; every field has a safe default."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    max_partition_gpu_share_pct: int = Field(default=25, ge=0, le=100)
    """Largest share of a partition's GPUs (percent, including this action) that drains may
    leave out of service; a drain going above it is denied."""

    max_drains_per_partition_per_hour: int = Field(default=3, ge=0, le=CEDAR_LONG_MAX)
    """Nodes Warden may drain or cordon per partition per hour; the next one is denied."""

    max_running_gpu_hours_killed: int = Field(default=512, ge=0, le=CEDAR_LONG_MAX)
    """GPU-hours already spent by running jobs that one action may kill (whole GPU-hours)."""

    max_other_users_jobs_touched: int = Field(default=10, ge=0, le=CEDAR_LONG_MAX)
    """Jobs of users other than the requester that one action may stop, hold or change."""

    @classmethod
    def from_file(cls, path: Path) -> PolicyConfig:
        """Read limits from a YAML mapping (missing keys keep their defaults).

        Raises:
            PolicyConfigError: naming the file when it cannot be read, is not a YAML mapping,
                has unknown keys, or a value is out of range.
        """
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise PolicyConfigError(str(path), None, f"cannot read: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise PolicyConfigError(str(path), None, "not UTF-8 text") from exc
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            raise PolicyConfigError(str(path), line, f"invalid YAML: {exc}") from exc
        except RecursionError:
            raise PolicyConfigError(str(path), None, "nested too deeply") from None
        except ValueError as exc:  # an integer of thousands of digits
            raise PolicyConfigError(str(path), None, " ".join(str(exc).split())[:200]) from None
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise PolicyConfigError(str(path), None, "expected a mapping of limit names to numbers")
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "<root>"
            raise PolicyConfigError(str(path), None, f"{field}: {first['msg']}") from exc
