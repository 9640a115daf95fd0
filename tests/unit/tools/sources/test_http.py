"""HTTPSource against a real loopback HTTP server started in the test (http.server in a thread)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from tools.errors import HTTPSourceError
from tools.sources.base import FetchRequest, Source
from tools.sources.http import HTTPSource

_METRICS = (
    b"# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
    b"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    b'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB",Hostname="gpu01"} 97\n'
)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urlsplit(self.path)
        if url.path == "/metrics":
            self._reply(200, _METRICS)
        elif url.path == "/api/v1/query":
            query = parse_qs(url.query).get("query", [""])[0]
            self._reply(200, ('{"status":"success","query":%s}' % repr(query).replace("'", '"')).encode())
        elif url.path == "/slow":
            threading.Event().wait(2.0)
            self._reply(200, b"late")
        else:
            self._reply(404, b"404 page not found\n")

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # silence the test output
        return


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]  # no stray tracebacks
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_is_a_source() -> None:
    assert isinstance(HTTPSource(), Source)


def test_fetch_returns_body_bytes(server: str) -> None:
    art = HTTPSource().fetch(FetchRequest(format="dcgm-prometheus-text", url=f"{server}/metrics", node="gpu01"))
    assert art.data == _METRICS
    assert art.url == f"{server}/metrics"
    assert art.node == "gpu01"


def test_params_are_encoded_by_httpx(server: str) -> None:
    query = 'DCGM_FI_DEV_GPU_UTIL{Hostname="gpu01"} < 10 & x'
    final_url, body = HTTPSource().get(f"{server}/api/v1/query", params={"query": query})
    assert query.replace('"', '\\"') in body.decode() or query in body.decode()
    assert "%7B" in final_url and " " not in final_url


def test_non_2xx_maps_to_http_source_error(server: str) -> None:
    with pytest.raises(HTTPSourceError) as info:
        HTTPSource().fetch(FetchRequest(format="prometheus-query-json", url=f"{server}/nope"))
    assert info.value.status == 404
    assert "404 page not found" in str(info.value)


def test_connection_refused_maps_to_http_source_error() -> None:
    import socket

    with socket.socket() as s:  # a port that was free a moment ago and has no listener
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(HTTPSourceError) as info:
        HTTPSource().get(f"http://127.0.0.1:{port}/metrics", timeout_s=2)
    assert info.value.status is None
    assert "ConnectError" in str(info.value)


def test_timeout_maps_to_http_source_error(server: str) -> None:
    with pytest.raises(HTTPSourceError) as info:
        HTTPSource().get(f"{server}/slow", timeout_s=0.3)
    assert "timed out" in str(info.value)


def test_invalid_url_and_missing_url(server: str) -> None:
    with pytest.raises(HTTPSourceError):
        HTTPSource().get("ftp://127.0.0.1/metrics")
    with pytest.raises(HTTPSourceError):
        HTTPSource().fetch(FetchRequest(format="dcgm-prometheus-text"))
