"""Issue 15's attacks, reproduced against Warden's code: budgets, concurrency, a hostile model, redaction
and a snapshot too big for the run's time limit. One command, one table.

Run: python bench/hardening.py [--code DIR] [--only budget,cost,concurrency,malformed,hostile,flood,redaction,time]
                               [--files N]

``--code DIR`` benchmarks another checkout (e.g. an old commit in a detached worktree:
``git worktree add --detach /tmp/hard-old <commit>``) with this file's attacks, so before and after
are measured the same way; an attack the old code cannot even express prints its error.

Everything runs on loopback in this process: an OpenAI-compatible upstream (gateway.testing's
StubUpstream, or tests/emulators/openai_upstream.py's Raw and Flood answering garbage, loaded from this
file's checkout) served by uvicorn in a thread, and Warden's
gateway (gateway.serve.uvicorn_config, the app `warden gateway serve` runs) served the same way; the
load is httpx, all requests of a burst in flight at once. The hostile-model runs are the real agent
(agent.diagnose.diagnose over a bundled incident) with the gateway routing to the hostile upstream.
The redaction corpus is the one tests/unit/gateway/test_redaction_corpus.py holds (read from that
file, so both checkouts get the same texts); the entries that need a site's user list are left out.

Rows (issue 15 item: attack -> what is counted):
  4   100 concurrent requests, 100-token daily key budget   -> tokens answered
  4   60 concurrent requests, $0.001 daily key budget       -> dollars spent (answered tokens x price)
  10  3 x 200 concurrent requests, healthy upstream         -> non-200 answers
  7   malformed upstream bodies through the gateway         -> HTTP statuses the caller got
  7   hostile model: each behaviour                         -> how the agent run ended
  7   an upstream answering 200 MB of garbage               -> status, how much the process grew
  8   redaction corpus through an OpenAI-compatible route   -> secrets that arrived upstream
  6   4,000-file snapshot, limits.wall_time_s = 3           -> run time, files read / not read
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import collections
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
# bench/gateway.py would shadow the gateway package when this folder leads sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE.parent]

PRICE_PER_MTOK = 16.0
"""USD per million tokens, input and output, for the cost attack: one ~25-token answer costs ~$0.0004."""


# ---------------------------------------------------------------- loopback servers


@contextmanager
def _serve(app: Any) -> Iterator[str]:
    from gateway.testing import serve_in_thread

    with serve_in_thread(app) as url:
        yield url


@contextmanager
def _gateway(config: dict[str, Any], store: Path) -> Iterator[str]:
    """Warden's gateway under uvicorn on a free loopback port; yields its /v1 base URL."""
    import uvicorn

    from gateway.config import GatewayConfig
    from gateway.serve import uvicorn_config

    server = uvicorn.Server(uvicorn_config(GatewayConfig.model_validate(config), "127.0.0.1", 0, store_path=store))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _upstreams() -> Any:
    """tests/emulators/openai_upstream.py of this file's checkout, loaded by path: the attacking upstreams
    stay the same whichever checkout ``--code`` measures (as the redaction corpus below does)."""
    import importlib.util

    path = ROOT / "tests" / "emulators" / "openai_upstream.py"
    spec = importlib.util.spec_from_file_location("warden_bench_openai_upstream", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


UPSTREAMS = _upstreams()
Raw = UPSTREAMS.Raw
"""An upstream answering every request with one raw body and status (garbage on purpose)."""
Flood = UPSTREAMS.Flood
"""An upstream answering 200 and then MiB after MiB of ``x`` (a garbage body without end)."""


def _burst(url: str, bodies: list[dict[str, Any]], headers: dict[str, str] | None = None) -> list[Any]:
    """POST every body at once; the responses (or the exception each raised), in order."""
    import httpx

    async def go() -> list[Any]:
        limits = httpx.Limits(max_connections=len(bodies) + 8, max_keepalive_connections=len(bodies) + 8)
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
            return await asyncio.gather(*(client.post("/chat/completions", json=b, headers=headers or {})
                                          for b in bodies), return_exceptions=True)

    return asyncio.run(go())


def _statuses(responses: list[Any]) -> collections.Counter[Any]:
    return collections.Counter(getattr(r, "status_code", type(r).__name__) for r in responses)


def _fmt(counter: collections.Counter[Any]) -> str:
    return ", ".join(f"{n} x {k}" for k, n in sorted(counter.items(), key=lambda kv: str(kv[0])))


def _usage(responses: list[Any]) -> tuple[int, int]:
    """(prompt, completion) tokens of the answered (200) responses."""
    p = c = 0
    for r in responses:
        if getattr(r, "status_code", 0) == 200:
            u = r.json().get("usage") or {}
            p, c = p + int(u.get("prompt_tokens") or 0), c + int(u.get("completion_tokens") or 0)
    return p, c


def _chat(content: str, model: str = "m", **fields: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": content}], **fields}


# ---------------------------------------------------------------- attacks


def attack_budget(tmp: Path) -> list[tuple[str, str, str]]:
    from gateway.budgets import generate_key
    from gateway.testing import StubReply, StubUpstream, provider_entry

    key, key_hash = generate_key()
    up = StubUpstream(default=StubReply(content="x" * 72), service_time_s=0.05)  # ~20 tokens, all in flight
    with _serve(up) as up_url, _gateway({"providers": [provider_entry("p", up_url)], "routes": {"m": ["p"]},
                                         "keys": [{"name": "alice", "key_sha256": key_hash, "tokens_per_day": 100}]},
                                        tmp / "budget.db") as url:
        rs = _burst(url, [_chat("hi", max_tokens=20)] * 100, {"Authorization": f"Bearer {key}"})
    p, c = _usage(rs)
    return [("4", "100 concurrent, 100-token daily budget", f"{p + c:,} tokens answered ({_fmt(_statuses(rs))}); "
             f"upstream saw {len(up.received)}")]


def attack_cost(tmp: Path) -> list[tuple[str, str, str]]:
    from gateway.budgets import generate_key
    from gateway.testing import StubReply, StubUpstream, provider_entry

    key, key_hash = generate_key()
    up = StubUpstream(default=StubReply(content="x" * 72), service_time_s=0.05)
    price = {"input_usd_per_mtok": PRICE_PER_MTOK, "output_usd_per_mtok": PRICE_PER_MTOK}
    with _serve(up) as up_url, _gateway({"providers": [provider_entry("p", up_url)], "routes": {"m": ["p"]},
                                         "prices": {"stub-model": price},
                                         "keys": [{"name": "alice", "key_sha256": key_hash, "cost_per_day_usd": 0.001}]},
                                        tmp / "cost.db") as url:
        rs = _burst(url, [_chat("hi", max_tokens=20)] * 60, {"Authorization": f"Bearer {key}"})
    p, c = _usage(rs)
    return [("4", "60 concurrent, $0.001 daily budget", f"${(p + c) * PRICE_PER_MTOK / 1e6:.4f} spent "
             f"({_fmt(_statuses(rs))})")]


def attack_concurrency(tmp: Path) -> list[tuple[str, str, str]]:
    from gateway.testing import StubUpstream, provider_entry

    up = StubUpstream(service_time_s=0.01)
    total: collections.Counter[Any] = collections.Counter()
    with _serve(up) as up_url, _gateway({"providers": [provider_entry("p", up_url)], "routes": {"m": ["p"]}},
                                        tmp / "conc.db") as url:
        for _wave in range(3):  # a fresh client (fresh connections) per wave
            total.update(_statuses(_burst(url, [_chat(f"r{i}") for i in range(200)])))
    errors = sum(n for k, n in total.items() if k != 200)
    return [("10", "3 x 200 concurrent, healthy upstream", f"{errors} errors of 600 ({_fmt(total)})")]


GARBAGE = {
    "empty choices": json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode(),
    "html body": b"<html>502 Bad Gateway</html>",
    "JSON list": b"[1, 2, 3]",
    "tool_calls not objects": b'{"choices": [{"message": {"role": "assistant", "tool_calls": ["x"]}}]}',
    "usage 1e999": b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}], '
                   b'"usage": {"prompt_tokens": 1e999}}',
}


def attack_malformed(tmp: Path) -> list[tuple[str, str, str]]:
    from gateway.testing import provider_entry

    seen = []
    for i, (name, body) in enumerate(GARBAGE.items()):
        cfg = {"providers": [provider_entry("p", "")], "routes": {"m": ["p"]},
               "retry": {"attempts_per_provider": 1, "backoff_initial_s": 0.001, "backoff_max_s": 0.002}}
        with _serve(Raw(body)) as up_url:
            cfg["providers"][0]["openai_base_url"] = up_url
            with _gateway(cfg, tmp / f"bad{i}.db") as url:
                seen.append(f"{name}: {_fmt(_statuses(_burst(url, [_chat('hi')])))}")
    return [("7", "malformed upstream replies -> caller", "; ".join(seen))]


def _call(name: str, args: Any, i: int = 0) -> dict[str, Any]:
    return {"id": f"c{i}_{name}", "type": "function",
            "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}


def _run_hostile(upstream: Any, tmp: Path, i: int) -> str:
    from agent.audit import AuditLog
    from agent.diagnose import diagnose
    from gateway.config import GatewayConfig
    from gateway.testing import provider_entry
    from tools.read.context import ReadContext

    incident = ROOT / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"
    start = time.monotonic()
    with _serve(upstream) as url:
        cfg = GatewayConfig.model_validate({
            "providers": [provider_entry("llm", url)], "routes": {"llm": ["llm"]},
            "retry": {"attempts_per_provider": 1, "backoff_initial_s": 0.001, "backoff_max_s": 0.002}})
        try:
            d = diagnose(ReadContext.from_snapshot(incident / "snapshot"), "Why did job 73412 fail?", model="llm",
                         gateway_config=cfg, audit=AuditLog(tmp / f"audit{i}.db"))
        except BaseException as e:  # noqa: BLE001 - what the old code let escape is the measurement
            return f"{type(e).__name__} raised ({time.monotonic() - start:.1f} s)"
    stop = (d.stopped_by or "").split(":", 1)[0]
    how = f"partial, stopped_by {stop}" if stop else f"answered {d.root_cause}"
    return f"{how}, {d.root_cause}, answered_by {getattr(d, 'answered_by', '?')} ({time.monotonic() - start:.1f} s)"


BIG_ANSWER = {"root_cause": "gpu_hardware_fault", "culprits": ["node:gpu007"], "confidence": 0.9,
              "summary": "A" * 2_000_000, "evidence": [{"text": "GPU hardware error event(s) on gpu007"}]}


def attack_hostile(tmp: Path) -> list[tuple[str, str, str]]:
    from gateway.testing import StubReply, StubUpstream

    cases: dict[str, Callable[[], Any]] = {
        "endless no-op tool calls": lambda: StubUpstream(default=StubReply(tool_calls=[_call("get_cluster_overview", {})])),
        "invalid JSON arguments": lambda: StubUpstream(default=StubReply(tool_calls=[_call("get_jobs", "{not json")])),
        "unknown tool": lambda: StubUpstream(default=StubReply(tool_calls=[_call("drop_all_tables", {})])),
        "empty choices": lambda: Raw(GARBAGE["empty choices"]),
        "garbage body": lambda: Raw(b"<html>oops</html>"),
        "upstream 500": lambda: Raw(b'{"error": {"message": "boom"}}', status=500),
        "2 MB summary": lambda: StubUpstream(script=[StubReply(tool_calls=[_call("get_findings", {})])],
                                             default=StubReply(tool_calls=[_call("final_result", BIG_ANSWER, 1)])),
    }
    return [("7", f"hostile model: {name}", _run_hostile(make(), tmp, i)) for i, (name, make) in enumerate(cases.items())]


def _corpus() -> dict[str, tuple[str, list[str]]]:
    """CORPUS of tests/unit/gateway/test_redaction_corpus.py (a literal), less the user-name entries."""
    tree = ast.parse((ROOT / "tests/unit/gateway/test_redaction_corpus.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "CORPUS":
            corpus = ast.literal_eval(node.value)
            return {k: v for k, v in corpus.items() if not k.startswith("user_")}
    raise SystemExit("CORPUS not found in tests/unit/gateway/test_redaction_corpus.py")


def attack_redaction(tmp: Path) -> list[tuple[str, str, str]]:
    from gateway.testing import StubUpstream, provider_entry

    corpus = _corpus()
    up = StubUpstream()
    with _serve(up) as up_url, _gateway({"providers": [provider_entry("ext", up_url)], "routes": {"ext": ["ext"]}},
                                        tmp / "redact.db") as url:
        for text, _ in corpus.values():  # one request each, so a leak is attributable
            _burst(url, [_chat(text, model="ext")])
    leaked = [name for (name, (_, secrets)), body in zip(corpus.items(), up.received)
              if any(s in json.dumps(body, ensure_ascii=False) for s in secrets)]
    shown = ", ".join(leaked[:6]) + (f", +{len(leaked) - 6} more" if len(leaked) > 6 else "")
    return [("8", f"redaction corpus ({len(corpus)} secrets)", f"{len(leaked)} arrived upstream"
             + (f": {shown}" if leaked else ""))]


XID = "[{t:>12.6f}] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
NOISE = "[{t:>12.6f}] systemd[1]: Started Session {t:.0f} of user alice.\n"
N_FILES = 4000
"""Files of the time attack's snapshot (``--files``): enough that reading them takes longer than 3 s."""


def attack_time(tmp: Path) -> list[tuple[str, str, str]]:
    """N_FILES kernel logs of 400 lines each, one Xid in each; the run may take 3 s."""
    from agent.diagnose import diagnose
    from agent.limits import LoopLimits
    from tools.read.context import ReadContext

    root = tmp / "huge"
    (root / "kernel").mkdir(parents=True)
    noise = "".join(NOISE.format(t=float(i)) for i in range(399))
    entries = []
    for i in range(N_FILES):
        (root / f"kernel/n{i:05d}.log").write_text(noise + XID.format(t=500.0))
        entries.append({"path": f"kernel/n{i:05d}.log", "format": "kernel-log", "node": f"n{i:05d}"})
    (root / "manifest.yaml").write_text(json.dumps({"captured_at": "2026-03-04T10:15:00Z", "files": entries}))
    start = time.monotonic()
    ctx = ReadContext.from_snapshot(root)
    opened = time.monotonic() - start
    d = diagnose(ctx, "What is wrong?", limits=LoopLimits(wall_time_s=3), audit=False)
    took = time.monotonic() - start
    unread = sum(1 for u in d.unreadable if u.kind == "time")
    stop = (d.stopped_by or "none").split(":", 1)[0]
    return [("6", f"{N_FILES:,}-file snapshot, wall_time_s = 3",
             f"{took:.1f} s (manifest {opened:.1f} s), stopped_by {stop}, {N_FILES - unread:,} files read, "
             f"{unread:,} listed not read")]


def attack_flood(tmp: Path) -> list[tuple[str, str, str]]:
    import resource

    from gateway.testing import provider_entry

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    with _serve(Flood(200)) as up_url, _gateway({"providers": [provider_entry("p", up_url)], "routes": {"m": ["p"]},
                                                 "retry": {"attempts_per_provider": 1}}, tmp / "flood.db") as url:
        rs = _burst(url, [_chat("hi")])
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024 - before
    return [("7", "upstream answers a 200 MB garbage body", f"{_fmt(_statuses(rs))}; peak RSS grew {grew} MiB")]


ATTACKS: dict[str, Callable[[Path], list[tuple[str, str, str]]]] = {
    "budget": attack_budget, "cost": attack_cost, "concurrency": attack_concurrency, "malformed": attack_malformed,
    "hostile": attack_hostile, "flood": attack_flood, "redaction": attack_redaction, "time": attack_time,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", type=Path, help="benchmark this checkout's code instead of this one's")
    ap.add_argument("--only", default=",".join(ATTACKS), help="comma-separated attacks: " + ",".join(ATTACKS))
    ap.add_argument("--files", type=int, default=N_FILES, help="files in the time attack's snapshot")
    args = ap.parse_args()
    globals()["N_FILES"] = args.files
    code = (args.code or ROOT).resolve()
    sys.path.insert(0, str(code))
    import logging
    import os

    logging.disable(logging.WARNING)  # uvicorn's and the gateway's warnings about the garbage are expected
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="warden-hardening-") as tmp:
        os.environ["WARDEN_HOME"] = str(Path(tmp) / "home")
        for name in args.only.split(","):
            start = time.monotonic()
            try:
                rows += ATTACKS[name.strip()](Path(tmp))
            except Exception as e:  # noqa: BLE001 - an attack the code under test cannot run is a result too
                rows.append(("?", name, f"could not run: {type(e).__name__}: {' '.join(str(e).split())[:160]}"))
            print(f"  {name}: {time.monotonic() - start:.1f} s", file=sys.stderr, flush=True)
    import subprocess

    rev = subprocess.run(["git", "-C", str(code), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"\nIssue 15 attacks against {code} ({rev.stdout.strip() or 'unknown commit'})\n")
    w = max(len(r[1]) for r in rows)
    print(f"{'item':<5} {'attack':<{w}}  result")
    print(f"{'-' * 5} {'-' * w}  {'-' * 40}")
    for item, attack, result in rows:
        print(f"{item:<5} {attack:<{w}}  {result}")


if __name__ == "__main__":
    main()
