"""`warden mcp` through the official MCP SDK's own client: over stdio (the CLI as a subprocess) and
streamable HTTP (real uvicorn on a loopback socket), on a bundled incident. Only read tools are
listed, each read-only; a call returns the agent's bounded result, redacted and audited; bad
arguments and unknown tools come back as MCP errors while the server keeps serving."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import threading
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from agent.audit import AuditLog
from agent.mcpserver import EvidenceHolder, build_server, http_server, redact_value
from agent.toolset import TOOL_NAMES
from gateway.redaction import Redactor
from tools import read
from tools.actions import ACTION_FACTS
from tools.read.context import ReadContext

REPO = Path(__file__).resolve().parents[4]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"


async def _exercise(client: Client) -> dict[str, object]:
    """What every transport must show: the tool list, a good call, bad calls, the server still serving."""
    listed = (await client.list_tools()).tools
    good = await client.call_tool("get_kernel_events", {"node": "gpu007", "kind": "xid"})
    bad_type = await client.call_tool("get_gpu_metrics", {"limit": "lots"})
    bad_cursor = await client.call_tool("get_jobs", {"more": "bogus"})
    unknown = await client.call_tool("execute_action", {"action": {"type": "drain_node", "node": "gpu007"}})
    after = await client.call_tool("get_nodes", {"node": "gpu007"})
    return {"listed": listed, "good": good, "bad_type": bad_type, "bad_cursor": bad_cursor, "unknown": unknown,
            "after": after}


def _check(seen: dict[str, object]) -> None:
    listed = seen["listed"]
    names = {t.name for t in listed}  # type: ignore[attr-defined]
    assert names == set(TOOL_NAMES)
    assert not names & ({"execute_action"} | set(ACTION_FACTS))  # nothing that changes the cluster
    for t in listed:  # type: ignore[attr-defined]
        assert t.annotations.read_only_hint is True and t.annotations.destructive_hint is False, t.name
        assert t.description and t.output_schema
    good = seen["good"]
    assert good.is_error is False  # type: ignore[attr-defined]
    data = json.loads(good.content[0].text)  # type: ignore[attr-defined]
    ctx = ReadContext.from_snapshot(INCIDENT / "snapshot")
    assert data == read.get_kernel_events(ctx, node="gpu007", kind="xid").model_dump(mode="json")  # the agent's result
    assert good.structured_content == data  # type: ignore[attr-defined]
    assert any(e["line"] == 27 and "79" in e["text"] for e in data["events"])
    assert seen["bad_type"].is_error and "limit" in seen["bad_type"].content[0].text  # type: ignore[attr-defined]
    assert seen["bad_cursor"].is_error and "not a cursor" in seen["bad_cursor"].content[0].text  # type: ignore[attr-defined]
    assert seen["unknown"].is_error and "Unknown tool" in seen["unknown"].content[0].text  # type: ignore[attr-defined]
    assert seen["after"].is_error is False  # type: ignore[attr-defined]


def _audited(home: Path) -> list[str]:
    log = AuditLog(home / "audit.db")
    try:
        assert log.verify().ok
        return [r.payload["tool"] for r in log.records() if r.kind == "tool_call" and (r.run_id or "").startswith("mcp-")]
    finally:
        log.close()


def test_stdio_through_the_cli(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "WARDEN_HOME": str(tmp_path)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "agent.cli.app", "mcp", str(INCIDENT)],
                                   env=env, cwd=str(REPO))

    async def run() -> dict[str, object]:
        async with Client(params, read_timeout_seconds=120) as client:
            return await _exercise(client)

    _check(asyncio.run(run()))
    # the good calls and the refused cursor were recorded; the wrong type never reached a tool
    assert _audited(tmp_path) == ["get_kernel_events", "get_jobs", "get_nodes"]


def test_streamable_http_on_loopback(tmp_path):
    audit = AuditLog(tmp_path / "audit.db")
    holder = EvidenceHolder(lambda: ReadContext.from_snapshot(INCIDENT / "snapshot"), audit=audit)
    uv, sock, url = http_server(build_server(holder, redactor=Redactor()), port=0)
    t = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()

    async def run() -> dict[str, object]:
        async with Client(url, read_timeout_seconds=60) as client:
            return await _exercise(client)

    try:
        seen = asyncio.run(run())
    finally:
        uv.should_exit = True
        t.join(15)
        sock.close()
    _check(seen)
    audit.close()
    assert _audited(tmp_path) == ["get_kernel_events", "get_jobs", "get_nodes"]


def test_results_are_redacted_and_stay_valid_json(tmp_path):
    snap = tmp_path / "snap"
    shutil.copytree(INCIDENT / "snapshot", snap)
    log = snap / "kernel" / "gpu007.log"
    key = "sk-proj-" + "a1b2c3d4" * 4
    lines = log.read_text().splitlines(keepends=True)
    lines[26] = lines[26].replace("name=<unknown>", f'name="{key}" password="hunter2"')
    log.write_text("".join(lines))
    server = build_server(EvidenceHolder(lambda: ReadContext.from_snapshot(snap)), redactor=Redactor())

    async def run():
        async with Client(server) as client:
            return await client.call_tool("get_kernel_events", {"node": "gpu007", "kind": "xid"})

    r = asyncio.run(run())
    text = r.content[0].text
    assert key not in text and "hunter2" not in text
    assert "[REDACTED:openai_key]" in text and "[REDACTED:password]" in text
    assert json.loads(text) == r.structured_content
    assert redact_value({"a": ['x "password=\\"p\\"" y', 3]}, Redactor())["a"][1] == 3
