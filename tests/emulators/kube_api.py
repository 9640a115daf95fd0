"""A loopback Kubernetes API server for tests: serves and records real API JSON.

No API server can run here, so this stands in for the part Warden talks to, with the wire format
of kube-apiserver 1.29 (bodies from tests/fixtures/k8s-json, Status objects as the API returns
them)::

    GET   /api/v1/nodes, /api/v1/nodes/<n>                      NodeList / Node (404 Status if unknown)
    PATCH /api/v1/nodes/<n>          application/merge-patch+json (RFC 7386 applied to the stored Node)
    GET   /api/v1/pods[?fieldSelector=spec.nodeName=<n>]       PodList
    GET   /api/v1/namespaces/<ns>/pods | events                one namespace's PodList / EventList
    GET   /api/v1/namespaces/<ns>/pods/<p>                     Pod (404 once evicted)
    POST  /api/v1/namespaces/<ns>/pods/<p>/eviction            201 Status Success; 429 Status
                                                               (DisruptionBudget) for a pod a PDB protects
    GET   /api/v1/namespaces/<ns>                              Namespace (labels as configured)
    GET   /api/v1/events                                       EventList

Every request is recorded (method, path, content type, parsed JSON body) in ``KubeApi.requests``.
The client, its request building and Warden's handling of each answer are real; only the server
is a stand-in.
"""

from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from kubernetes.client import ApiClient, Configuration

__all__ = ["KubeApi", "FIXTURES"]

FIXTURES = Path(__file__).parents[1] / "fixtures" / "k8s-json"


def _status(code: int, reason: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure" if code >= 400 else "Success",
            "message": message, "reason": reason, "code": code, **extra}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: ``null`` deletes a key, objects merge, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class KubeApi:
    """The emulated API server's state and its HTTP server on 127.0.0.1 (an ephemeral port).

    Args:
        nodes, pods: objects as the API returns them (default: the 1.29 fixtures).
        namespaces: namespace name -> labels.
        pdb_protected: ``namespace/name`` of pods whose eviction a PodDisruptionBudget refuses.
    """

    def __init__(self, *, nodes: list[dict[str, Any]] | None = None, pods: list[dict[str, Any]] | None = None,
                 namespaces: dict[str, dict[str, str]] | None = None, pdb_protected: set[str] | None = None) -> None:
        self.nodes = {n["metadata"]["name"]: n for n in (nodes if nodes is not None else
                      json.loads((FIXTURES / "1.29-nodelist-gpu.json").read_text())["items"])}
        self.pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in (pods if pods is not None else
                     json.loads((FIXTURES / "1.29-podlist-problems.json").read_text())["items"])}
        self.namespaces = namespaces or {}
        self.pdb_protected = pdb_protected or set()
        self.events = json.loads((FIXTURES / "1.29-eventlist-core-v1.json").read_text())
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def client(self) -> ApiClient:
        """An official-client ApiClient pointed at this server."""
        return ApiClient(Configuration(host=self.url))

    def __enter__(self) -> KubeApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def mutations(self) -> list[dict[str, Any]]:
        """The recorded PATCH/POST/PUT/DELETE requests."""
        return [r for r in self.requests if r["method"] != "GET"]

    # ---- request handling --------------------------------------------------------------------

    def answer(self, method: str, raw_path: str, body: Any) -> tuple[int, dict[str, Any]]:
        """The (status, JSON body) the API server gives for one request."""
        url = urlsplit(raw_path)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        query = parse_qs(url.query)
        with self._lock:
            if parts[:3] == ["api", "v1", "nodes"]:
                if len(parts) == 3 and method == "GET":
                    return 200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                                 "items": list(self.nodes.values())}
                node = self.nodes.get(parts[3]) if len(parts) == 4 else None
                if node is None:
                    return 404, _status(404, "NotFound", f'nodes "{parts[3] if len(parts) > 3 else ""}" not found',
                                        details={"name": parts[-1], "kind": "nodes"})
                if method == "PATCH":
                    self.nodes[parts[3]] = merge_patch(node, body)
                return 200, self.nodes[parts[3]]
            if parts == ["api", "v1", "pods"] and method == "GET":
                sel = (query.get("fieldSelector") or [""])[0]
                items = list(self.pods.values())
                if sel.startswith("spec.nodeName="):
                    items = [p for p in items if p["spec"].get("nodeName") == sel.split("=", 1)[1]]
                return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}
            if parts == ["api", "v1", "events"]:
                return 200, self.events
            if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 5 and method == "GET":
                ns = parts[3]
                if parts[4] == "pods":
                    return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                                 "items": [p for p in self.pods.values() if p["metadata"]["namespace"] == ns]}
                if parts[4] == "events":
                    return 200, {**self.events, "items": [e for e in self.events.get("items", [])
                                                          if (e.get("metadata") or {}).get("namespace") == ns]}
            if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 4:
                if parts[3] not in self.namespaces:
                    return 404, _status(404, "NotFound", f'namespaces "{parts[3]}" not found')
                return 200, {"kind": "Namespace", "apiVersion": "v1",
                             "metadata": {"name": parts[3], "labels": self.namespaces[parts[3]]},
                             "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
            if parts[:3] == ["api", "v1", "namespaces"] and len(parts) >= 6 and parts[4] == "pods":
                ref = f"{parts[3]}/{parts[5]}"
                pod = self.pods.get(ref)
                if pod is None:
                    return 404, _status(404, "NotFound", f'pods "{parts[5]}" not found',
                                        details={"name": parts[5], "kind": "pods"})
                if len(parts) == 7 and parts[6] == "eviction" and method == "POST":
                    if ref in self.pdb_protected:
                        return 429, _status(429, "TooManyRequests",
                                            "Cannot evict pod as it would violate the pod's disruption budget.",
                                            details={"causes": [{"reason": "DisruptionBudget", "message":
                                                     "The disruption budget train-pdb needs 1 healthy pods and has "
                                                     "1 currently"}]})
                    del self.pods[ref]
                    return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
                if len(parts) == 6 and method == "GET":
                    return 200, pod
        return 404, _status(404, "NotFound", "the server could not find the requested resource")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                body = json.loads(raw) if raw else None
                api.requests.append({"method": self.command, "path": self.path,
                                     "content_type": self.headers.get("Content-Type"), "body": body})
                status, doc = api.answer(self.command, self.path, body)
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve  # noqa: N815 (http.server's names)

            def log_message(self, *args: object) -> None:
                pass

        return Handler
