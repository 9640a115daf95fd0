"""HTTP source: GET a URL (a DCGM exporter's /metrics, Prometheus' query API) with httpx.

httpx's exceptions are mapped to ``HTTPSourceError`` here and nowhere else: connection refused,
timeouts, invalid URLs and non-2xx statuses all arrive as one typed error naming the URL.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from tools.errors import HTTPSourceError
from tools.sources.base import FetchRequest, RawArtifact

__all__ = ["HTTPSource"]

_DETAIL_CHARS = 300


class HTTPSource:
    """A Source that fetches artifacts with HTTP GET.

    Args:
        headers: headers sent with every request (e.g. an Authorization header).
        client: an httpx.Client to reuse (tests pass one with a custom transport); by default a
            client is created per request, so the source holds no open connections.
        verify: TLS verification for the default client (True, False or a CA bundle path).

    Example:
        >>> src = HTTPSource()
        >>> body = src.get("http://127.0.0.1:9090/api/v1/query", params={"query": "up"})  # doctest: +SKIP
    """

    name = "http"

    def __init__(
        self,
        *,
        headers: Mapping[str, str] | None = None,
        client: httpx.Client | None = None,
        verify: bool | str = True,
    ) -> None:
        self.headers = dict(headers or {})
        self._client = client
        self._verify = verify

    def get(
        self, url: str, *, params: Mapping[str, str | int | float] | None = None, timeout_s: float = 30.0
    ) -> tuple[str, bytes]:
        """GET ``url`` with query ``params``.

        Args:
            url: absolute http(s) URL.
            params: query parameters, encoded by httpx (values are never spliced into the URL by hand).
            timeout_s: connect/read/write/pool timeout in seconds.

        Returns:
            ``(final_url, body)``: the URL actually requested (with the query string) and the raw body.

        Raises:
            HTTPSourceError: invalid URL, connection failure, timeout (status None) or a non-2xx
                status (status set, detail from the start of the body).
        """
        try:
            if self._client is not None:
                resp = self._client.get(url, params=params, headers=self.headers, timeout=timeout_s)
            else:
                with httpx.Client(verify=self._verify, timeout=timeout_s) as client:
                    resp = client.get(url, params=params, headers=self.headers)
        except httpx.TimeoutException as exc:
            raise HTTPSourceError(url, None, f"timed out after {timeout_s:g} s ({type(exc).__name__})") from exc
        except httpx.InvalidURL as exc:
            raise HTTPSourceError(url, None, f"invalid URL: {exc}") from exc
        except httpx.HTTPError as exc:  # TransportError, UnsupportedProtocol, decoding errors
            raise HTTPSourceError(url, None, f"{type(exc).__name__}: {exc}") from exc
        final_url = str(resp.request.url)
        if not resp.is_success:
            detail = resp.content[:_DETAIL_CHARS].decode("utf-8", "replace").strip() or resp.reason_phrase
            raise HTTPSourceError(final_url, resp.status_code, detail)
        return final_url, resp.content

    def fetch(self, req: FetchRequest) -> RawArtifact:
        """GET ``req.url`` and return the body as an artifact (``path`` and ``url`` name the URL).

        Raises:
            HTTPSourceError: when ``req.url`` is missing or the GET fails (see ``get``).
        """
        if not req.url:
            raise HTTPSourceError("", None, f"an HTTP fetch of {req.format} needs url")
        final_url, body = self.get(req.url, timeout_s=req.timeout_s)
        return RawArtifact(
            format=req.format,
            data=body,
            path=req.path or final_url,
            url=final_url,
            node=req.node,
            job=req.job,
        )
