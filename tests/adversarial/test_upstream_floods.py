"""Issue 15 item 7, walked again: an upstream that floods the gateway with garbage.

Before: a 200 MB non-JSON body was read whole into memory (the process grew by ~450 MB) before it
was refused as invalid JSON, so a bigger one ends the gateway out of memory; a streamed ``data:``
line longer than aiohttp's 512 KiB line limit raised ``LineTooLong`` out of the ASGI app (a
traceback, no typed answer). Now a body over the cap is refused after at most the cap was read, and
an over-long stream line ends the stream, both as typed ``provider_bad_response`` errors (502).
Real gateway app, real loopback upstreams streaming the flood in 1 MiB chunks.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from gateway.app import create_app
from gateway.config import GatewayConfig
from gateway.providers.openai_compat import MAX_RESPONSE_BYTES
from gateway.testing import asgi_post, chat, provider_entry, serve_in_thread
from tests.emulators.openai_upstream import Flood


def _post(url: str, tmp_path: Path, **fields: Any):
    async def go():
        cfg = GatewayConfig.model_validate({"providers": [provider_entry("p", url)], "routes": {"m": ["p"]},
                                            "retry": {"attempts_per_provider": 1}})
        app = create_app(cfg, store_path=tmp_path / "g.db")
        try:
            return await asgi_post(app, chat("hi", **fields))
        finally:
            await app.aclose()

    return asyncio.run(go())


def test_an_endless_body_is_refused_at_the_cap(tmp_path: Path) -> None:
    flood = Flood(MAX_RESPONSE_BYTES // (1 << 20) + 64)
    with serve_in_thread(flood) as url:
        r = _post(url, tmp_path)
    assert r.status_code == 502, r.text
    err = r.json()["error"]
    assert err["code"] == "all_providers_failed" and "over the" in err["message"] and "cap" in err["message"]


def test_an_over_long_stream_line_ends_the_stream_with_a_typed_error(tmp_path: Path) -> None:
    with serve_in_thread(Flood(4, b"text/event-stream", b"data: ")) as url:
        r = _post(url, tmp_path, stream=True)
    assert r.status_code == 502 or ('"provider_bad_response"' in r.text and r.text.endswith("data: [DONE]\n\n")), \
        r.text[:300]
