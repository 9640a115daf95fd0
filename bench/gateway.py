"""Gateway benchmark: added latency and throughput of Warden's gateway against LiteLLM proxy.

Run: ``python bench/gateway.py`` (``--quick`` for fewer requests, ``--no-litellm`` to skip it).

Starts, each in its own process on 127.0.0.1:
  * an OpenAI-compatible upstream (``gateway.testing.StubUpstream`` under uvicorn) with a fixed
    service time (default 10 ms),
  * Warden's gateway over HTTP (uvicorn, httptools, uvloop, one process),
  * LiteLLM proxy (``litellm --config ... --port ...``) pointing at the same upstream,
then measures, from one load-generator process with a minimal keep-alive HTTP/1.1 client (one
connection per concurrent worker): direct calls to the upstream, Warden in-process (the ASGI
app called directly, as the agent does), Warden over HTTP, and LiteLLM, at concurrency 1, 32
and 128; plus cache-hit latency. Added latency = target p50/p99 minus direct p50/p99 at the same
concurrency. All traffic stays on loopback; request counts are bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BODY = {
    "model": "bench",
    "messages": [
        {"role": "system", "content": "You are Warden, a safe operations agent for GPU and HPC clusters."},
        {"role": "user", "content": "Job 4242 has logged nothing for 40 minutes on gpu017. Why? " * 4},
    ],
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout_s: float, proc: subprocess.Popen[bytes] | None = None) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


# ---------------------------------------------------------------- child roles


def _role_upstream(port: int, service_ms: float) -> None:
    import uvicorn

    from gateway.testing import StubUpstream

    app = StubUpstream(service_time_s=service_ms / 1000, model="stub-model")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, http="httptools",
                loop="uvloop", backlog=4096)


def _gateway_config(upstream_url: str) -> Any:
    from gateway.config import GatewayConfig

    return GatewayConfig.model_validate({
        "providers": [{"name": "stub", "kind": "openai_compat", "openai_base_url": upstream_url,
                       "openai_api_key": "bench"}],
        "routes": {"bench": ["stub"]},
        "prices": {"stub-model": {"input_usd_per_mtok": 0.5, "output_usd_per_mtok": 1.5}},
    })


def _role_gateway(port: int, upstream_url: str, store: str) -> None:
    import uvicorn

    from gateway.serve import uvicorn_config

    uvicorn.Server(uvicorn_config(_gateway_config(upstream_url), "127.0.0.1", port, store_path=store)).run()


# ---------------------------------------------------------------- load generator


class _Conn:
    """One keep-alive HTTP/1.1 connection sending pre-encoded POSTs."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, raw: bytes) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length, chunked = None, False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if chunked:
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                await self.reader.readexactly(size + 2)
                if size == 0:
                    break
        elif length is not None:
            await self.reader.readexactly(length)
        return status

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _raw_post(port: int, path: str, body: dict[str, Any], key: str = "bench") -> bytes:
    data = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
            f"authorization: Bearer {key}\r\ncontent-length: {len(data)}\r\n\r\n").encode() + data


@dataclass
class Result:
    p50_ms: float
    p99_ms: float
    rps: float
    errors: int


def _summarize(lat: list[float], elapsed: float, errors: int) -> Result:
    lat.sort()
    return Result(lat[len(lat) // 2] * 1000, lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000,
                  len(lat) / elapsed, errors)


async def _load_http(port: int, path: str, body: dict[str, Any], conc: int, n: int, key: str = "bench") -> Result:
    raw = _raw_post(port, path, body, key)
    conns = [_Conn(port) for _ in range(conc)]
    await asyncio.gather(*(c.request(raw) for c in conns))  # connect + warm up
    lat: list[float] = []
    errors = 0
    remaining = n

    async def worker(conn: _Conn) -> None:
        nonlocal remaining, errors
        while remaining > 0:
            remaining -= 1
            t = time.perf_counter()
            status = await conn.request(raw)
            lat.append(time.perf_counter() - t)
            errors += status != 200

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.perf_counter() - t0
    for c in conns:
        c.close()
    return _summarize(lat, elapsed, errors)


async def _load_asgi(app: Any, body: dict[str, Any], conc: int, n: int) -> Result:
    data = json.dumps(body).encode()
    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": [
        (b"content-type", b"application/json"), (b"authorization", b"Bearer bench")]}

    async def call() -> int:
        status = 0

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": data, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

        await app(dict(scope), receive, send)
        return status

    await asyncio.gather(*(call() for _ in range(conc)))
    lat: list[float] = []
    errors = 0
    remaining = n

    async def worker() -> None:
        nonlocal remaining, errors
        while remaining > 0:
            remaining -= 1
            t = time.perf_counter()
            status = await call()
            lat.append(time.perf_counter() - t)
            errors += status != 200

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(conc)))
    return _summarize(lat, time.perf_counter() - t0, errors)


# ---------------------------------------------------------------- LiteLLM


LITELLM_KEY = "sk-bench-" + secrets.token_hex(32)


def _start_litellm(upstream_url: str, workdir: Path) -> tuple[subprocess.Popen[bytes] | None, int, str]:
    exe = shutil.which("litellm", path=str(Path(sys.executable).parent)) or shutil.which("litellm")
    if exe is None:
        return None, 0, "not installed (pip install 'litellm[proxy]', the bench extra)"
    port = _free_port()
    cfg = workdir / "litellm.yaml"
    cfg.write_text(
        "model_list:\n"
        "  - model_name: bench\n"
        "    litellm_params:\n"
        "      model: openai/stub-model\n"
        f"      api_base: {upstream_url}\n"
        "      api_key: bench\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
        "  num_retries: 0\n"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR", "NO_DOCKER": "1",
           "DISABLE_SCHEMA_UPDATE": "true", "LITELLM_MASTER_KEY": LITELLM_KEY}
    log = open(workdir / "litellm.log", "wb")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen([exe, "--config", str(cfg), "--host", "127.0.0.1", "--port", str(port),
                             "--num_workers", "1"], stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    if not _wait_port(port, 180, proc):
        _stop(proc)
        tail = (workdir / "litellm.log").read_text(errors="replace")[-400:].replace("\n", " ")
        return None, 0, f"did not start within 180 s: {tail}"
    return proc, port, ""


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# ---------------------------------------------------------------- main


def _spawn(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, __file__, *args], start_new_session=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--service-ms", type=float, default=10.0, help="upstream service time (ms)")
    ap.add_argument("--quick", action="store_true", help="fewer requests")
    ap.add_argument("--no-litellm", action="store_true")
    ap.add_argument("--role", choices=["upstream", "gateway"], help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--upstream", help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.role == "upstream":
        _role_upstream(a.port, a.service_ms)
        return
    if a.role == "gateway":
        _role_gateway(a.port, a.upstream, a.store)
        return

    import uvloop

    from gateway.app import create_app

    workdir = Path(tempfile.mkdtemp(prefix="warden-bench-"))
    up_port, gw_port = _free_port(), _free_port()
    upstream_url = f"http://127.0.0.1:{up_port}/v1"
    procs = [_spawn(["--role", "upstream", "--port", str(up_port), "--service-ms", str(a.service_ms)])]
    litellm: subprocess.Popen[bytes] | None = None
    try:
        assert _wait_port(up_port, 30, procs[0]), "upstream did not start"
        procs.append(_spawn(["--role", "gateway", "--port", str(gw_port), "--upstream", upstream_url,
                             "--store", str(workdir / "gateway-http.sqlite3")]))
        assert _wait_port(gw_port, 30, procs[1]), "gateway did not start"
        litellm, ll_port, ll_why = (None, 0, "skipped (--no-litellm)") if a.no_litellm else _start_litellm(
            upstream_url, workdir)
        concs = (1, 32, 128)
        counts = {1: 150, 32: 800, 128: 1280} if a.quick else {1: 400, 32: 2000, 128: 3200}

        async def run_all() -> dict[str, Any]:
            app = create_app(_gateway_config(upstream_url), store_path=workdir / "gateway-inproc.sqlite3")
            out: dict[str, Any] = {}
            for conc in concs:
                n = counts[conc]
                out[("direct", conc)] = await _load_http(up_port, "/v1/chat/completions", BODY, conc, n)
                out[("warden in-process", conc)] = await _load_asgi(app, BODY, conc, n)
                out[("warden http", conc)] = await _load_http(gw_port, "/v1/chat/completions", BODY, conc, n)
                if litellm is not None:
                    out[("litellm proxy", conc)] = await _load_http(ll_port, "/v1/chat/completions", BODY, conc, n,
                                                                         LITELLM_KEY)
            cached = {**BODY, "temperature": 0}
            out[("warden in-process", "cache")] = await _load_asgi(app, cached, 1, 300)
            out[("warden http", "cache")] = await _load_http(gw_port, "/v1/chat/completions", cached, 1, 300)
            await app.aclose()
            return out

        results = uvloop.run(run_all())
    finally:
        _stop(litellm)
        for p in procs:
            _stop(p)
    _print_table(results, concs, a, ll_why)


def _print_table(results: dict[Any, Result], concs: tuple[int, ...], a: argparse.Namespace, ll_why: str) -> None:
    print(f"\nWarden gateway benchmark — upstream service time {a.service_ms:g} ms, {os.cpu_count()} cores, "
          f"loopback, one process per server\n")
    header = f"{'target':<20}{'conc':>5}{'p50 ms':>9}{'p99 ms':>9}{'added p50':>11}{'added p99':>11}" \
             f"{'req/s':>9}{'errors':>8}"
    print(header)
    print("-" * len(header))
    for target in ("direct", "warden in-process", "warden http", "litellm proxy"):
        for conc in concs:
            r = results.get((target, conc))
            if r is None:
                if target == "litellm proxy":
                    print(f"{target:<20}{conc:>5}  not measured: {ll_why}")
                continue
            d = results[("direct", conc)]
            print(f"{target:<20}{conc:>5}{r.p50_ms:>9.2f}{r.p99_ms:>9.2f}{r.p50_ms - d.p50_ms:>11.2f}"
                  f"{r.p99_ms - d.p99_ms:>11.2f}{r.rps:>9.0f}{r.errors:>8}")
    for target in ("warden in-process", "warden http"):
        r = results[(target, "cache")]
        print(f"{target + ' (cache hit)':<20}{1:>5}{r.p50_ms:>9.2f}{r.p99_ms:>9.2f}{'-':>11}{'-':>11}"
              f"{r.rps:>9.0f}{r.errors:>8}")
    if ("litellm proxy", 1) in results:
        print("\nRatio of added p50 latency, Warden http / LiteLLM:")
        for conc in concs:
            d = results[("direct", conc)].p50_ms
            w = results[("warden http", conc)].p50_ms - d
            ll = results[("litellm proxy", conc)].p50_ms - d
            print(f"  conc {conc:>3}: {w:.2f} ms / {ll:.2f} ms = {w / ll if ll > 0 else float('nan'):.3f}")


if __name__ == "__main__":
    main()
