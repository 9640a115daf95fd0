"""What ``warden serve`` accepts: Alertmanager's webhook payload (version 4) and a generic JSON alert.

Alertmanager's ``webhook_config`` POSTs one notification per alert group::

    {"version": "4", "groupKey": "{}:{alertname=\\"WardenGpuXid\\"}", "truncatedAlerts": 0,
     "status": "firing", "receiver": "warden", "groupLabels": {...}, "commonLabels": {...},
     "commonAnnotations": {...}, "externalURL": "http://alertmanager:9093",
     "alerts": [{"status": "firing", "labels": {...}, "annotations": {...}, "startsAt": "…",
                 "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "…", "fingerprint": "…"}]}

The generic webhook takes one alert or ``{"alerts": [...]}`` with ``labels`` (``alertname``
required), optional ``annotations`` and ``status``. Label values are untrusted text: they are
bounded here (at most 64 labels of 1,024 characters) and escaped wherever they are shown.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["Alert", "AlertmanagerPayload", "GenericPayload", "MAX_ALERTS"]

MAX_ALERTS = 10_000
"""Alerts per request; a larger body is refused whole (413 is the body-size cap, this the count)."""


def _bounded(v: dict[str, str]) -> dict[str, str]:
    if len(v) > 64:
        raise ValueError("more than 64 labels")
    for k, val in v.items():
        if len(k) > 128 or len(val) > 1024:
            raise ValueError(f"label {k[:40]!r} is longer than 128 (name) / 1024 (value) characters")
    return v


class Alert(BaseModel):
    """One alert (Alertmanager's fields; unknown ones are ignored)."""

    model_config = ConfigDict(extra="ignore")

    status: Literal["firing", "resolved"] = "firing"
    labels: dict[str, str]
    annotations: dict[str, str] = Field(default_factory=dict)
    startsAt: str | None = None  # noqa: N815 - Alertmanager's field names
    endsAt: str | None = None  # noqa: N815
    generatorURL: str | None = None  # noqa: N815
    fingerprint: str | None = None

    @field_validator("labels", "annotations")
    @classmethod
    def _bounds(cls, v: dict[str, str]) -> dict[str, str]:
        return _bounded(v)

    @property
    def alertname(self) -> str:
        """The ``alertname`` label ('' when absent)."""
        return self.labels.get("alertname", "")


class AlertmanagerPayload(BaseModel):
    """Alertmanager's webhook notification, version 4."""

    model_config = ConfigDict(extra="ignore")

    version: Literal["4"]
    groupKey: str = Field(max_length=10_000)  # noqa: N815
    truncatedAlerts: int = 0  # noqa: N815
    status: Literal["firing", "resolved"]
    receiver: str = ""
    groupLabels: dict[str, str] = Field(default_factory=dict)  # noqa: N815
    commonLabels: dict[str, str] = Field(default_factory=dict)  # noqa: N815
    commonAnnotations: dict[str, str] = Field(default_factory=dict)  # noqa: N815
    externalURL: str = ""  # noqa: N815
    alerts: list[Alert] = Field(max_length=MAX_ALERTS)


class _GenericAlert(Alert):
    @field_validator("labels")
    @classmethod
    def _named(cls, v: dict[str, str]) -> dict[str, str]:
        if not v.get("alertname"):
            raise ValueError("labels.alertname is required")
        return v


class GenericPayload(BaseModel):
    """The generic webhook: ``{"alerts": [...]}`` (a single alert object is accepted too)."""

    model_config = ConfigDict(extra="ignore")

    alerts: list[_GenericAlert] = Field(min_length=1, max_length=MAX_ALERTS)
