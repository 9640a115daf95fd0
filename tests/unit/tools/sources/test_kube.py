"""KubeSource against a loopback HTTP server.

A Kubernetes API server cannot run here, so each test starts a tiny ``http.server`` on 127.0.0.1
that serves recorded real-format API bodies (tests/fixtures/k8s-json) at ``/api/v1/nodes``,
``/api/v1/pods`` and ``/api/v1/events`` — or a ``Status`` 403, a stall, a broken connection — and
points the official client at it with ``Configuration(host="http://127.0.0.1:PORT")``. The client,
its request building and its error paths are real; only the API server is a stand-in.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from kubernetes.client import ApiClient, Configuration

from tools.errors import HTTPSourceError, SourceError
from tools.models.k8s import K8sEvent, K8sNode, K8sPod
from tools.parsers import parse_artifact
from tools.sources import kube
from tools.sources.base import FetchRequest, Source
from tools.sources.kube import KubeSource

FIX = Path(__file__).parents[3] / "fixtures" / "k8s-json"
BODIES = {
    "/api/v1/nodes": (FIX / "1.29-nodelist-gpu.json").read_bytes(),
    "/api/v1/pods": (FIX / "1.29-podlist-problems.json").read_bytes(),
    "/api/v1/events": (FIX / "1.29-eventlist-core-v1.json").read_bytes(),
}
FORBIDDEN = (FIX / "1.29-status-forbidden.json").read_bytes()


class _Api(BaseHTTPRequestHandler):
    mode = "ok"
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path.split("?", 1)[0]
        type(self).seen.append(self.path)
        if self.mode == "stall":
            time.sleep(2)
            return
        if self.mode == "hangup":
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if self.mode == "forbidden":
            self._send(403, FORBIDDEN)
        elif path in BODIES:
            self._send(200, BODIES[path])
        else:
            self._send(404, b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server could '
                            b'not find the requested resource","reason":"NotFound","code":404}')

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def api_server() -> Iterator[tuple[str, type[_Api]]]:
    handler = type("Handler", (_Api,), {"mode": "ok", "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.block_on_close = False  # a stalled handler must not hold up teardown
    # ...and when it wakes after the test (its client long gone) it must not print a traceback into
    # whatever test captures stderr then.
    server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


def _source(host: str, *, retries: int | None = None) -> KubeSource:
    cfg = Configuration(host=host)
    cfg.retries = retries
    return KubeSource(api_client=ApiClient(cfg))


def test_is_a_source() -> None:
    assert isinstance(KubeSource(api_client=ApiClient(Configuration(host="http://127.0.0.1:1"))), Source)
    assert kube.__all__ == ["KubeSource", "ENDPOINTS"]


def test_fetch_returns_the_api_body_byte_for_byte(api_server) -> None:
    host, handler = api_server
    art = _source(host).fetch(FetchRequest(format="k8s-json", url="/api/v1/nodes"))
    assert art.data == BODIES["/api/v1/nodes"]
    assert (art.format, art.path, art.url, art.command) == (
        "k8s-json", "k8s/nodes.json", f"{host}/api/v1/nodes", "kubectl get nodes -o json")
    assert handler.seen == ["/api/v1/nodes"]
    nodes = parse_artifact(art)
    assert [type(n) for n in nodes] == [K8sNode] * 4 and nodes[1].allocatable_gpu == 7


def test_fetch_all_lists_nodes_pods_events_and_they_parse(api_server) -> None:
    host, handler = api_server
    arts = _source(host).fetch_all(timeout_s=5)
    assert [a.path for a in arts] == ["k8s/nodes.json", "k8s/pods.json", "k8s/events.json"]
    assert [p.split("?")[0] for p in handler.seen] == ["/api/v1/nodes", "/api/v1/pods", "/api/v1/events"]
    kinds = [{type(o) for o in parse_artifact(a)} for a in arts]
    assert kinds == [{K8sNode}, {K8sPod}, {K8sEvent}]


def test_request_path_overrides_the_snapshot_path(api_server) -> None:
    host, _ = api_server
    art = _source(host).fetch(FetchRequest(format="k8s-json", url="/api/v1/pods", path="k8s/pods-all.json"))
    assert art.path == "k8s/pods-all.json" and art.data == BODIES["/api/v1/pods"]


def test_forbidden_status_becomes_http_source_error_with_its_message(api_server) -> None:
    host, handler = api_server
    handler.mode = "forbidden"
    with pytest.raises(HTTPSourceError) as err:
        _source(host).fetch(FetchRequest(format="k8s-json", url="/api/v1/nodes"))
    assert err.value.status == 403 and err.value.url == f"{host}/api/v1/nodes"
    assert "cannot list resource \"nodes\"" in str(err.value)


def test_connection_refused_names_the_endpoint() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(HTTPSourceError) as err:
        _source(f"http://127.0.0.1:{port}", retries=0).fetch(FetchRequest(format="k8s-json", url="/api/v1/events"))
    assert err.value.status is None and err.value.url.endswith("/api/v1/events")
    assert "NewConnectionError" in str(err.value)


def test_stalled_server_times_out(api_server) -> None:
    host, handler = api_server
    handler.mode = "stall"
    with pytest.raises(HTTPSourceError, match=r"timed out after 0.3 s"):
        _source(host, retries=0).fetch(FetchRequest(format="k8s-json", url="/api/v1/pods", timeout_s=0.3))


def test_dropped_connection_is_http_source_error(api_server) -> None:
    host, handler = api_server
    handler.mode = "hangup"
    with pytest.raises(HTTPSourceError) as err:
        _source(host, retries=0).fetch(FetchRequest(format="k8s-json", url="/api/v1/nodes"))
    assert err.value.status is None


@pytest.mark.parametrize("req, why", [
    (FetchRequest(format="k8s-events-text", url="/api/v1/events"), "k8s-json only"),
    (FetchRequest(format="k8s-json", url="/api/v1/secrets"), "unknown Kubernetes API path"),
    (FetchRequest(format="k8s-json"), "unknown Kubernetes API path"),
])
def test_bad_requests_are_source_errors(req: FetchRequest, why: str) -> None:
    with pytest.raises(SourceError, match=why):
        _source("http://127.0.0.1:1").fetch(req)


def test_missing_kubeconfig_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="kubeconfig"):
        KubeSource(kubeconfig=str(tmp_path / "absent")).fetch(FetchRequest(format="k8s-json", url="/api/v1/nodes"))
