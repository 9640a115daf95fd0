"""The sandbox's alerting as its real daemons report it: Prometheus loaded the three Warden rules
(Xid, node down, MDT ops rate) and evaluates each without error, and Alertmanager routes to
`warden serve`'s URL. (The Xid and MDT rules fire end to end in test_alert_to_slack.py; no sandbox
fault stops a node's exporter, so WardenNodeDown is only shown loaded and healthy here.)"""

from __future__ import annotations

import time

import httpx

from sandbox.layout import SandboxConfig


def test_rules_loaded_and_alertmanager_routes_to_warden(config: SandboxConfig) -> None:
    deadline = time.monotonic() + 30  # a rule's health is "unknown" until its first evaluation
    while True:
        groups = httpx.get(f"{config.prometheus_url}/api/v1/rules", timeout=10).json()["data"]["groups"]
        rules = {r["name"]: r for g in groups for r in g["rules"]}
        if all(r["health"] != "unknown" for r in rules.values()) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert {"WardenGpuXid", "WardenNodeDown", "WardenMdtOpsHigh"} <= set(rules)
    for name in ("WardenGpuXid", "WardenNodeDown", "WardenMdtOpsHigh"):
        assert rules[name]["health"] == "ok", (name, rules[name].get("lastError"))
    am = httpx.get(f"{config.alertmanager_url}/api/v2/status", timeout=10).json()
    assert config.warden_webhook_url in am["config"]["original"]
    targets = httpx.get(f"{config.prometheus_url}/api/v1/alertmanagers", timeout=10).json()["data"]
    assert any(str(config.alertmanager_port) in a["url"] for a in targets["activeAlertmanagers"])
