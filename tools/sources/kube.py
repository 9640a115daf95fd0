"""Kubernetes API source: nodes, pods and events as the API server returns them (format k8s-json).

Uses the official ``kubernetes`` client (CoreV1Api ``list_node``, ``list_pod_for_all_namespaces``,
``list_event_for_all_namespaces``) with ``_preload_content=False``, so an artifact holds the exact
JSON body the API server sent (a ``NodeList``/``PodList``/``EventList``), byte for byte — the same
bytes ``record`` saves and replay feeds to ``parse_k8s_json``.

The client's errors are mapped to ``HTTPSourceError`` here and nowhere else: ``ApiException``
(non-2xx status, TLS failures), urllib3's connection errors and timeouts, and kubeconfig loading
errors (``SourceError``) — each naming the endpoint.
"""

from __future__ import annotations

import json
import re

import urllib3
from kubernetes.client import ApiClient, Configuration, CoreV1Api
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException, load_incluster_config, load_kube_config

from tools.errors import HTTPSourceError, SourceError
from tools.sources.base import FetchRequest, RawArtifact

__all__ = ["KubeSource", "ENDPOINTS"]

ENDPOINTS: dict[str, tuple[str, str, str]] = {
    "/api/v1/nodes": ("list_node", "k8s/nodes.json", "kubectl get nodes -o json"),
    "/api/v1/pods": ("list_pod_for_all_namespaces", "k8s/pods.json", "kubectl get pods -A -o json"),
    "/api/v1/events": ("list_event_for_all_namespaces", "k8s/events.json", "kubectl get events -A -o json"),
}
"""API path -> (CoreV1Api method, snapshot path, equivalent kubectl command)."""

_NAMESPACED = re.compile(r"^/api/v1/namespaces/([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)/(pods|events)$")
"""``/api/v1/namespaces/<ns>/pods|events``: one namespace's list (list_namespaced_pod / _event)."""

_DETAIL_CHARS = 300


def _status_detail(exc: ApiException) -> str:
    """The ``message`` of a Kubernetes ``Status`` body, else the start of the body, else the reason."""
    body = exc.body.decode("utf-8", "replace") if isinstance(exc.body, bytes) else (exc.body or "")
    try:
        doc = json.loads(body)
        if isinstance(doc, dict) and doc.get("message"):
            return str(doc["message"])[:_DETAIL_CHARS]
    except ValueError:
        pass
    return (body.strip()[:_DETAIL_CHARS] or str(exc.reason or "no detail")).replace("\n", " ")


class KubeSource:
    """A Source that lists nodes, pods and events through the Kubernetes API.

    Args:
        api_client: a configured ``kubernetes.client.ApiClient`` (tests pass one whose
            ``Configuration(host="http://127.0.0.1:PORT")`` points at a loopback server).
        kubeconfig: path of a kubeconfig file; with neither argument, ``~/.kube/config`` (or
            ``$KUBECONFIG``) is loaded, then the in-cluster service account.
        context: kubeconfig context to use.

    Each list is one request without pagination, so an artifact is always a complete list.

    Example:
        >>> src = KubeSource(context="gpu-prod")  # doctest: +SKIP
        >>> art = src.fetch(FetchRequest(format="k8s-json", url="/api/v1/nodes"))  # doctest: +SKIP
    """

    name = "kube"

    def __init__(self, *, api_client: ApiClient | None = None, kubeconfig: str | None = None,
                 context: str | None = None, in_cluster: bool = False) -> None:
        self._client = api_client
        self._kubeconfig = kubeconfig
        self._context = context
        self._in_cluster = in_cluster

    def api_client(self) -> ApiClient:
        """The configured ApiClient (built on first use); the Kubernetes actions run through it too.

        Raises:
            SourceError: no usable kubeconfig or in-cluster service account.
        """
        if self._client is None:
            cfg = Configuration()
            if self._in_cluster:
                try:
                    load_incluster_config(client_configuration=cfg)
                except ConfigException as exc:
                    raise SourceError(f"in-cluster Kubernetes configuration: {exc}") from exc
            else:
                try:
                    load_kube_config(config_file=self._kubeconfig, context=self._context, client_configuration=cfg)
                except (ConfigException, OSError) as exc:
                    if self._kubeconfig or self._context:
                        raise SourceError(f"kubeconfig {self._kubeconfig or '~/.kube/config'}: {exc}") from exc
                    try:
                        load_incluster_config(client_configuration=cfg)
                    except ConfigException as exc2:
                        raise SourceError(f"no Kubernetes configuration: {exc}; in-cluster: {exc2}") from exc2
            self._client = ApiClient(cfg)
        return self._client

    def _api(self) -> CoreV1Api:
        return CoreV1Api(self.api_client())

    def _host(self) -> str:
        return str(self._client.configuration.host) if self._client is not None else "<kube-apiserver>"

    def fetch(self, req: FetchRequest) -> RawArtifact:
        """List one resource; ``req.url`` is the API path (``/api/v1/nodes``, ``/api/v1/pods``,
        ``/api/v1/events``).

        Returns:
            The raw JSON body as a ``k8s-json`` artifact; ``path`` is ``req.path`` or the snapshot
            path (``k8s/nodes.json`` ...), ``url`` the full URL, ``command`` the equivalent kubectl.

        Raises:
            SourceError: a format other than k8s-json, an unknown API path, or no usable kubeconfig.
            HTTPSourceError: the API answered non-2xx (status and the Status message given), or the
                connection failed or timed out (status None); the URL names the endpoint.
        """
        if req.format != "k8s-json":
            raise SourceError(f"the Kubernetes source serves k8s-json only, not {req.format}")
        endpoint = req.url or ""
        ns = _NAMESPACED.match(endpoint)
        args: tuple[str, ...] = ()
        if ns:
            kind = ns.group(3)
            method, path, command = (f"list_namespaced_{kind[:-1]}", f"k8s/{kind}-{ns.group(1)}.json",
                                     f"kubectl get {kind} -n {ns.group(1)} -o json")
            args = (ns.group(1),)
        elif endpoint in ENDPOINTS:
            method, path, command = ENDPOINTS[endpoint]
        else:
            raise SourceError(f"unknown Kubernetes API path {endpoint!r} (known: {', '.join(ENDPOINTS)}, "
                              "/api/v1/namespaces/<ns>/pods|events)")
        api = self._api()
        url = self._host().rstrip("/") + endpoint
        try:
            resp = getattr(api, method)(*args, _preload_content=False, _request_timeout=req.timeout_s)
            body = resp.data
        except ApiException as exc:
            raise HTTPSourceError(url, exc.status or None, _status_detail(exc)) from exc
        except urllib3.exceptions.TimeoutError as exc:
            raise HTTPSourceError(url, None, f"timed out after {req.timeout_s:g} s ({type(exc).__name__})") from exc
        except urllib3.exceptions.MaxRetryError as exc:
            reason = exc.reason if exc.reason is not None else exc
            if isinstance(reason, urllib3.exceptions.TimeoutError):
                raise HTTPSourceError(url, None, f"timed out after {req.timeout_s:g} s ({type(reason).__name__})") from exc
            raise HTTPSourceError(url, None, f"{type(reason).__name__}: {str(reason)[:_DETAIL_CHARS]}") from exc
        except urllib3.exceptions.HTTPError as exc:  # ProtocolError, DecodeError, ...
            raise HTTPSourceError(url, None, f"{type(exc).__name__}: {str(exc)[:_DETAIL_CHARS]}") from exc
        return RawArtifact(format="k8s-json", data=body, path=req.path or path, url=url, command=command,
                           node=req.node, job=req.job)

    def fetch_all(self, *, timeout_s: float = 30.0, namespaces: list[str] | None = None) -> list[RawArtifact]:
        """Nodes, pods and events (in that order), as ``fetch`` returns them; with ``namespaces``,
        pods and events of those namespaces only (one list each).

        Raises:
            SourceError / HTTPSourceError: from the first list that fails.
        """
        paths = list(ENDPOINTS) if not namespaces else ["/api/v1/nodes", *[
            f"/api/v1/namespaces/{ns}/{kind}" for kind in ("pods", "events") for ns in namespaces]]
        return [self.fetch(FetchRequest(format="k8s-json", url=ep, timeout_s=timeout_s)) for ep in paths]
