"""Settings for small models behind the gateway: compact tool definitions (``compact_tools``) are
shorter, keep every argument bound, and the model's arguments are still validated against the full
schema; ``parallel_requests`` bounds how many eval runs share one server."""

from __future__ import annotations

import json

from agent.gateway_setup import wants_compact_tools
from agent.tool_compact import ARRAY_ITEMS, DESCRIPTION_CHARS, STRING_CHARS, compact_schema, compact_tools
from gateway.config import GatewayConfig
from gateway.testing import StubReply, StubUpstream, provider_entry, serve_in_thread
from tests.unit.agent.test_model_failures import INCIDENT, call, final
from agent.audit import AuditLog
from agent.diagnose import diagnose
from tools.read.context import ReadContext

BOUNDS = ("minimum", "maximum", "maxLength", "maxItems", "minItems", "enum", "required", "additionalProperties")


def _bounds(schema, path=""):
    """Every (path, bound, value) in a schema, the optional-null wrapper looked through."""
    out = set()
    if isinstance(schema, dict):
        branches = schema.get("anyOf")
        if isinstance(branches, list) and {"type": "null"} in branches:
            inner = next(b for b in branches if b != {"type": "null"})
            out |= _bounds({**inner, **{k: v for k, v in schema.items() if k != "anyOf"}}, path)
            return out
        for k, v in schema.items():
            if k in BOUNDS:
                out.add((path, k, json.dumps(v, sort_keys=True)))
            out |= _bounds(v, f"{path}/{k}")
    elif isinstance(schema, list):
        for i, v in enumerate(schema):
            out |= _bounds(v, f"{path}/{i}")
    return out


def _first_request(tmp_path, compact):
    up = StubUpstream(script=[StubReply(tool_calls=[call("get_findings", {"limit": 5})])],
                      default=StubReply(tool_calls=[final()]))
    with serve_in_thread(up) as url:
        cfg = GatewayConfig.model_validate({
            "providers": [provider_entry("llm", url, compact_tools=compact)], "routes": {"llm": ["llm"]},
            "retry": {"attempts_per_provider": 1}})
        d = diagnose(ReadContext.from_snapshot(INCIDENT / "snapshot"), "why?", model="llm", gateway_config=cfg,
                     audit=AuditLog(tmp_path / f"audit-{compact}.db"))
    return d, up.received[0]


def test_compact_tools_are_smaller_and_keep_every_bound(tmp_path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    d_full, full = _first_request(tmp_path, False)
    d_compact, compact = _first_request(tmp_path, True)
    assert d_full.answered_by == d_compact.answered_by == "model" and d_compact.root_cause == "gpu_hardware_fault"
    size = lambda b: len(json.dumps(b["tools"], separators=(",", ":")))  # noqa: E731
    assert size(compact) < 0.75 * size(full)
    by_name = {t["function"]["name"]: t["function"] for t in full["tools"]}
    for tool in compact["tools"]:
        f = tool["function"]
        assert len(f["description"]) <= DESCRIPTION_CHARS + 4
        assert by_name[f["name"]]["description"].split()[0] == f["description"].split()[0]
        # every bound stays; a maxLength above STRING_CHARS is tightened to it (a grammar server unrolls it)
        kept = {(p, k, str(min(int(v), STRING_CHARS)) if k == "maxLength" else v)
                for p, k, v in _bounds(by_name[f["name"]]["parameters"])}
        added = _bounds(f["parameters"]) - kept
        assert kept <= _bounds(f["parameters"]), f["name"]
        assert {(k, v) for _, k, v in added} <= {("maxLength", str(STRING_CHARS)), ("maxItems", str(ARRAY_ITEMS))}
    limit = next(t for t in compact["tools"] if t["function"]["name"] == "get_findings")["function"]["parameters"]
    assert limit["properties"]["limit"] == {"maximum": 50, "minimum": 1, "type": "integer"}
    assert limit["properties"]["culprit"] == {"maxLength": 200, "type": "string"}


def test_a_property_named_like_a_dropped_key_stays():
    schema = {"properties": {"description": {"type": "string", "description": "x"}, "title": {"type": "integer"}},
              "required": ["description"], "title": "T"}
    assert compact_schema(schema) == {"properties": {"description": {"type": "string", "maxLength": STRING_CHARS},
                                                     "title": {"type": "integer"}}, "required": ["description"]}
    assert compact_tools(None) == []


def test_compact_is_the_default_for_a_small_context_only():
    def cfg(**p):
        return GatewayConfig.model_validate({"providers": [provider_entry("llm", "http://127.0.0.1:1/v1", **p)],
                                             "routes": {"llm": ["llm"]}})
    assert wants_compact_tools(cfg(context_tokens=8192), "llm")
    assert not wants_compact_tools(cfg(context_tokens=131072), "llm")
    assert not wants_compact_tools(cfg(), "llm")
    assert wants_compact_tools(cfg(compact_tools=True), "llm")
    assert not wants_compact_tools(cfg(context_tokens=8192, compact_tools=False), "llm")
    assert not wants_compact_tools(None, "llm")


def test_unbounded_answer_fields_get_a_bound():
    final = compact_schema({"properties": {"summary": {"type": "string"}, "culprits": {"type": "array",
                            "items": {"type": "string"}}, "root_cause": {"type": "string", "enum": ["a", "b"]}}})
    assert final["properties"]["summary"]["maxLength"] == STRING_CHARS
    assert final["properties"]["culprits"]["maxItems"] == ARRAY_ITEMS
    assert "maxLength" not in final["properties"]["root_cause"]


def test_eval_runs_no_more_incidents_at_once_than_the_server_answers():
    from agent.gateway_setup import route_parallelism

    cfg = GatewayConfig.model_validate({
        "providers": [provider_entry("one-slot", "http://127.0.0.1:1/v1", parallel_requests=1),
                      provider_entry("vllm", "http://127.0.0.1:2/v1"), {"name": "builtin", "kind": "builtin"}],
        "routes": {"small": ["one-slot", "builtin"], "big": ["vllm"], "warden-builtin": ["builtin"]}})
    assert route_parallelism(cfg, "small", 4) == 1
    assert route_parallelism(cfg, "big", 4) == 4
    assert route_parallelism(cfg, "warden-builtin", 2) == 2
    assert route_parallelism(None, "small", 3) == 3


def test_a_compacted_string_bound_never_exceeds_what_a_grammar_server_can_unroll():
    # the Diagnosis summary's maxLength 8,000 became 8,000 nested grammar rules in llama.cpp: "failed to parse
    # grammar", and the server went down for every later request
    from agent.tool_compact import STRING_CHARS, compact_schema
    out = compact_schema({"type": "object", "properties": {"summary": {"type": "string", "maxLength": 8000},
                                                           "name": {"type": "string", "maxLength": 64}}})
    assert out["properties"]["summary"]["maxLength"] == STRING_CHARS and out["properties"]["name"]["maxLength"] == 64
