"""``warden serve``: the HTTP receiver (Starlette under uvicorn).

=========================  ==================================================================
``POST /alertmanager``     Alertmanager webhook_config, payload version 4
``POST /webhook``          the generic JSON alert webhook (agent/serve/alerts.py)
``POST /slack/events``     the Slack app's request URL (HTTP mode), for the buttons Warden posts;
                           mounted when WARDEN_SLACK_SIGNING_SECRET is set
``GET /healthz``           ``ok``
``GET /status``            queue counters, runbooks, the latest investigations
=========================  ==================================================================

A request is answered as soon as its alerts are grouped and queued (202 with the intake report);
the investigations run on the queue's workers. A body over 8 MiB is refused (413), a malformed one
with 400 / 422 naming the field.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from agent.serve.alerts import AlertmanagerPayload, GenericPayload
from agent.serve.intake import Intake
from agent.serve.runner import Runner

__all__ = ["create_app", "MAX_BODY_BYTES"]

MAX_BODY_BYTES = 8 * 1024 * 1024


def _invalid(e: ValidationError) -> JSONResponse:
    err = e.errors()[0]
    where = ".".join(map(str, err["loc"])) or "<body>"
    return JSONResponse({"error": f"{where}: {err['msg']}"}, status_code=422)


async def _json(request: Request) -> Any | Response:
    if int(request.headers.get("content-length") or 0) > MAX_BODY_BYTES:
        return JSONResponse({"error": f"body larger than {MAX_BODY_BYTES} bytes"}, status_code=413)
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        return JSONResponse({"error": f"body larger than {MAX_BODY_BYTES} bytes"}, status_code=413)
    try:
        return json.loads(body)
    except ValueError as e:
        return JSONResponse({"error": f"body is not JSON: {e}"}, status_code=400)


def create_app(intake: Intake, runner: Runner, *, extra_routes: list[BaseRoute] | None = None) -> Starlette:
    """The receiver's ASGI app over ``intake`` (and ``runner``, for /status)."""

    async def receive(request: Request, model: type[BaseModel]) -> Response:
        doc = await _json(request)
        if isinstance(doc, Response):
            return doc
        if model is GenericPayload and isinstance(doc, dict) and "alerts" not in doc:
            doc = {"alerts": [doc]}
        try:
            payload = model.model_validate(doc)
        except ValidationError as e:
            return _invalid(e)
        rep = await run_in_threadpool(intake.receive, payload.alerts)  # type: ignore[attr-defined]
        return JSONResponse(rep.model_dump(), status_code=202)

    async def alertmanager(request: Request) -> Response:
        return await receive(request, AlertmanagerPayload)

    async def webhook(request: Request) -> Response:
        return await receive(request, GenericPayload)

    async def healthz(_: Request) -> Response:
        return PlainTextResponse("ok\n")

    async def status(_: Request) -> Response:
        q = intake.queue
        return JSONResponse({"queue": {**q.stats, "waiting": q.waiting(), "max_queued": q.max_queued},
                             "runbooks": [{"name": rb.name, "source": str(rb.source)} for rb in intake.runbooks],
                             "latest": [r.model_dump(mode="json") for r in list(runner.results)[-20:]]})

    routes: list[BaseRoute] = [Route("/alertmanager", alertmanager, methods=["POST"]),
                               Route("/webhook", webhook, methods=["POST"]),
                               Route("/healthz", healthz), Route("/status", status)]
    return Starlette(routes=routes + list(extra_routes or []))
