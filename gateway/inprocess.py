"""A pydantic-ai model that calls the in-process gateway app directly: no OpenAI SDK, no HTTP client.

``make_model`` (gateway.client) reaches the in-process app through the OpenAI SDK and an httpx ASGI
transport; importing the SDK alone costs more CPU than a bundled diagnosis, and its request
validation and transforms are most of a built-in round trip. ``InProcessModel`` builds the same
Chat Completions body that pydantic-ai's ``OpenAIChatModel`` sends (the same messages, tools and
``tool_choice``; tests/unit/agent/test_inprocess_model.py compares them on bundled incidents) and
hands it to the app as one ASGI request, so every request still passes the gateway's
authentication, budgets, redaction, routing, cache and usage ledger. The reply is the gateway's
JSON ``chat.completion``; an error status raises the ``ModelHTTPError`` the SDK path would.

Only what Warden's runs send is mapped: system/user text, tool calls and tool returns, text and
tool-call answers, and the settings ``max_tokens``, ``temperature``, ``top_p``, ``seed``,
``stop_sequences``, ``parallel_tool_calls``, ``tool_choice``, ``timeout`` and ``extra_headers``.
Anything else (images, files, thinking, other settings) raises ``UserError`` naming it: use
``gateway.client.make_model`` for those. Streaming is not offered (the agent loop does not stream).
"""

from __future__ import annotations

import asyncio
import functools
import json
from copy import deepcopy
from dataclasses import replace
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic_ai import _model_errors
from pydantic_ai._utils import guard_tool_call_id
from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError, UnexpectedModelBehavior, UserError
from pydantic_ai.messages import (ModelMessage, ModelRequest, ModelResponse, ModelResponsePart, SystemPromptPart,
                                  TextPart, ToolCallPart, ToolReturnPart, UserPromptPart)
from pydantic_ai.models import Model, ModelRequestParameters, _sendable_request_parts, check_allow_model_requests
from pydantic_ai.models._tool_choice import resolve_tool_choice
from pydantic_ai.profiles import ModelProfile, merge_profile
from pydantic_ai.profiles.openai import (_GPT_6_MODEL_PREFIXES, OpenAIJsonSchemaTransformer, OpenAIModelProfile,
                                        _OpenAIJsonSchemaTransformer, openai_model_profile)
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

from gateway.asgi import ASGIApp
from gateway.client import _NO_KEY, IN_PROCESS_BASE_URL, ProviderHook

__all__ = ["InProcessModel"]

_FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_call", "content_filter": "content_filter",
           "function_call": "tool_call"}
_PLAIN_SETTINGS = {"temperature": "temperature", "top_p": "top_p", "seed": "seed", "stop_sequences": "stop",
                   "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty",
                   "logit_bias": "logit_bias"}
_HANDLED = {*_PLAIN_SETTINGS, "max_tokens", "parallel_tool_calls", "tool_choice", "timeout", "extra_headers"}


@functools.lru_cache(maxsize=64)  # one per alias: a run builds its model afresh
def _profile(alias: str) -> ModelProfile:
    """The profile ``OpenAIChatModel`` with ``OpenAIProvider`` has for ``alias`` (its tool schemas and
    ``tool_choice`` depend on it), without importing the provider module (it imports the OpenAI SDK).
    tests/unit/agent/test_inprocess_model.py holds the two equal."""
    base = openai_model_profile(alias)
    breakpoints = bool(base.get("openai_supports_prompt_cache_breakpoints"))
    return merge_profile(base, OpenAIModelProfile(
        json_schema_transformer=OpenAIJsonSchemaTransformer if alias.startswith("ft:") else _OpenAIJsonSchemaTransformer,
        tool_addition_mode="with_definitions", tool_deferral_mode="with_tool_search",
        default_cache_retention=timedelta(minutes=30) if breakpoints else None, supports_cache=breakpoints,
        supported_cache_retentions=("30m",) if breakpoints else (),
        openai_responses_supports_prompt_cache_diagnostics=breakpoints,
        openai_responses_tool_choice_accepts_additional_tools=breakpoints,
        openai_responses_supports_max_reasoning_effort=breakpoints, openai_chat_supports_allowed_tools=True,
        supports_mid_conversation_effort=alias.startswith(_GPT_6_MODEL_PREFIXES),
        openai_supports_batch_api=True, supports_video_input=False))


def _tool_param(t: ToolDefinition, profile: ModelProfile) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": t.name, "description": t.description or "", "parameters": t.parameters_json_schema}
    if t.strict and profile.get("openai_supports_strict_tool_definition", True):
        fn["strict"] = t.strict
    return {"type": "function", "function": fn}


def _tools_and_choice(settings: ModelSettings, params: ModelRequestParameters,
                      profile: ModelProfile) -> tuple[list[dict[str, Any]], Any]:
    """The ``tools`` and ``tool_choice`` fields, as ``OpenAIChatModel._get_tool_choice`` sets them for a
    profile that supports tool forcing and ``allowed_tools``."""
    resolved = resolve_tool_choice(settings, params)
    defs = params.declared_tool_defs
    choice: Any
    if resolved in ("auto", "none", "required"):
        choice = resolved
    elif isinstance(resolved, tuple):
        mode, names = resolved
        if mode == "required" and len(names) == 1:
            choice = {"type": "function", "function": {"name": next(iter(names))}}
        else:
            choice = {"type": "allowed_tools", "allowed_tools": {
                "mode": mode, "tools": [{"type": "function", "function": {"name": n}} for n in defs if n in names]}}
    else:
        raise UserError(f"in-process gateway model: tool_choice {resolved!r} is not supported")
    tools = [_tool_param(t, profile) for t in defs.values()]
    return tools, (choice if tools else None)


def _request_messages(message: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in _sendable_request_parts(message.parts):
        if isinstance(part, SystemPromptPart):
            out.append({"role": "system", "content": part.content})
        elif isinstance(part, UserPromptPart) and isinstance(part.content, str):
            out.append({"role": "user", "content": part.content})
        elif isinstance(part, ToolReturnPart):
            text, files = part.model_response_str_and_user_content()
            if files:
                raise UserError("in-process gateway model: tool results with files are not supported")
            out.append({"role": "tool", "tool_call_id": guard_tool_call_id(t=part), "content": text})
        else:
            raise UserError(f"in-process gateway model: request part {type(part).__name__} is not supported")
    return out


def _response_message(message: ModelResponse) -> dict[str, Any] | None:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.content)
        elif isinstance(part, ToolCallPart):
            calls.append({"id": guard_tool_call_id(t=part), "type": "function",
                          "function": {"name": part.tool_name, "arguments": part.args_as_json_str()}})
        else:
            raise UserError(f"in-process gateway model: response part {type(part).__name__} is not supported")
    if not texts and not calls:
        return None  # nothing to send back (an empty answer): the API refuses content None without tool calls
    out: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    return out


_CUSTOMIZED: dict[tuple[Any, str], list[tuple[Any, Any]]] = {}
"""(transformer, name) -> [(a copy of the definition as given, its transform)] (customize_request_parameters)."""
_CUSTOMIZED_MAX = 8


def _transformed(key: tuple[Any, str], given: Any, transform: Callable[[], Any]) -> Any:
    """The cached transform of ``given`` (compared by value with the copy kept: a definition changed in
    place is transformed again), else ``transform()``, kept; a few variants per name at most."""
    seen = _CUSTOMIZED.setdefault(key, [])
    for original, done in seen:
        if original == given:
            return done
    done = transform()
    if len(seen) >= _CUSTOMIZED_MAX:
        seen.pop(0)
    seen.append((deepcopy(given), done))
    return done


class InProcessModel(Model):
    """A gateway alias as a pydantic-ai model, over the in-process app (see the module docstring).

    Args:
        alias: the model alias the gateway routes (e.g. ``warden-builtin``).
        app: the gateway app (``gateway.app.create_app``).
        api_key: the virtual key, when the gateway has keys configured.
        run_id: sent as ``X-Warden-Run-Id`` (per-run cap, ledger).
        on_provider: told (provider name, provider kind) of every answer.
        timeout_s: the request's time limit when the run sets none (s).
    """

    def __init__(self, alias: str, app: ASGIApp, *, api_key: str | None = None, run_id: str | None = None,
                 on_provider: ProviderHook | None = None, timeout_s: float = 600.0) -> None:
        super().__init__(profile=_profile(alias))
        self._alias = alias
        self._app = app
        self._headers = [(b"authorization", f"Bearer {api_key or _NO_KEY}".encode()),
                         (b"content-type", b"application/json")]
        if run_id:
            self._headers.append((b"x-warden-run-id", run_id.encode()))
        self._on_provider = on_provider
        self._timeout_s = timeout_s
        self._transformer = self.profile.get("json_schema_transformer")

    @property
    def model_name(self) -> str:
        return self._alias

    @property
    def system(self) -> str:
        return "openai"  # what OpenAIChatModel reports: usage and run metadata read the same

    @property
    def base_url(self) -> str:
        return IN_PROCESS_BASE_URL

    def customize_request_parameters(self, model_request_parameters: ModelRequestParameters) -> ModelRequestParameters:
        """The profile's JSON-schema transform of each tool definition and of the output object, done once
        per distinct definition in the process: every request of every run sends the same fourteen tools,
        pydantic-ai prepares each request twice, and the transform deep-copies each schema."""
        p = model_request_parameters
        base = super().customize_request_parameters
        output = p.output_object
        if output is not None:
            output = _transformed((self._transformer, "output:" + (output.name or "")), output, lambda: base(
                replace(p, function_tools=[], output_tools=[])).output_object)
        return replace(p, function_tools=[self._customized(t) for t in p.function_tools],
                       output_tools=[self._customized(t) for t in p.output_tools], output_object=output)

    def _customized(self, t: ToolDefinition) -> ToolDefinition:
        base = super().customize_request_parameters
        return _transformed((self._transformer, t.name), t,
                            lambda: base(ModelRequestParameters(function_tools=[t])).function_tools[0])

    def _body(self, messages: Sequence[ModelMessage], settings: ModelSettings,
              params: ModelRequestParameters) -> dict[str, Any]:
        unknown = sorted(set(settings) - _HANDLED)
        if unknown:
            raise UserError(f"in-process gateway model: settings {unknown} are not supported")
        tools, choice = _tools_and_choice(settings, params, self.profile)
        sent: list[dict[str, Any]] = []
        for m in messages:
            if isinstance(m, ModelRequest):
                sent.extend(_request_messages(m))
            else:
                mapped = _response_message(m)
                if mapped is not None:
                    sent.append(mapped)
        lead = next((i for i, m in enumerate(sent) if m.get("role") != "system"), len(sent))
        sent[lead:lead] = [{"role": "system", "content": p.content}
                           for p in self._get_instruction_parts(messages, params) or []]
        body: dict[str, Any] = {"model": self._alias, "messages": sent}
        if tools:
            body["tools"] = tools
            if "parallel_tool_calls" in settings:
                body["parallel_tool_calls"] = settings["parallel_tool_calls"]
        if choice is not None:
            body["tool_choice"] = choice
        body["stream"] = False
        for name, field in _PLAIN_SETTINGS.items():
            if name in settings:
                body[field] = settings[name]  # type: ignore[literal-required]
        if "max_tokens" in settings:
            body["max_completion_tokens"] = settings["max_tokens"]
        return body

    async def _post(self, body: dict[str, Any], settings: ModelSettings) -> tuple[int, dict[str, str], bytes]:
        headers = list(self._headers)
        for k, v in (settings.get("extra_headers") or {}).items():
            headers.append((k.lower().encode(), str(v).encode()))
        payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
                 "query_string": b"", "headers": headers, "client": ("127.0.0.1", 0),
                 "server": ("warden-gateway.invalid", 80)}
        sent = False
        status, got, chunks = 500, {}, []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                await asyncio.Event().wait()  # the body was read; ASGI apps then only wait for a disconnect
            sent = True
            return {"type": "http.request", "body": payload, "more_body": False}

        async def send(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                got.update((k.decode().lower(), v.decode()) for k, v in message.get("headers") or ())
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        timeout = settings.get("timeout")
        limit = float(timeout) if isinstance(timeout, (int, float)) else self._timeout_s
        try:
            async with asyncio.timeout(limit):
                await self._app(scope, receive, send)
        except TimeoutError as exc:
            raise _model_errors.connection_error(self.model_name, "Request timed out.", exc, timeout=True) from exc
        return status, got, b"".join(chunks)

    def _error(self, status: int, raw: bytes, headers: dict[str, str]) -> ModelHTTPError:
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode(errors="replace")
        err = body.get("error") if isinstance(body, dict) else None
        err = err if isinstance(err, dict) else {}
        code, kind, message = err.get("code"), err.get("type"), err.get("message")
        category = _model_errors.openai_compatible_category(status, code, kind, message)
        return ModelHTTPError.for_category(category, status_code=status, model_name=self.model_name,
                                           body=err or body, headers=headers, provider_error_code=code,
                                           provider_error_type=kind)

    def _response(self, data: dict[str, Any]) -> ModelResponse:
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise UnexpectedModelBehavior(f"Invalid response from the gateway: no choices ({exc})") from exc
        parts: list[ModelResponsePart] = []
        if message.get("content"):
            parts.append(TextPart(message["content"]))
        for call in message.get("tool_calls") or ():
            fn = call.get("function") or {}
            part = ToolCallPart(fn.get("name", ""), fn.get("arguments"), tool_call_id=call.get("id"))
            part.tool_call_id = guard_tool_call_id(t=part)
            parts.append(part)
        raw_finish = choice.get("finish_reason") or "stop"
        details: dict[str, Any] = {"finish_reason": raw_finish}
        if data.get("created"):
            details["timestamp"] = datetime.fromtimestamp(int(data["created"]), tz=timezone.utc)
        usage = data.get("usage")
        if isinstance(usage, dict):
            extra = {k: v for k, v in usage.items() if isinstance(v, int) and k not in
                     {"prompt_tokens", "completion_tokens", "input_tokens", "output_tokens", "total_tokens"}}
            req_usage = RequestUsage.extract({"model": self.model_name, "usage": usage}, provider="openai",
                                             provider_url=IN_PROCESS_BASE_URL, provider_fallback="openai",
                                             api_flavor="chat", details=extra)
        else:
            req_usage = RequestUsage(unmeasured_requests=1)
        return ModelResponse(parts=parts, usage=req_usage, model_name=data.get("model") or self.model_name,
                             timestamp=datetime.now(timezone.utc), provider_details=details,
                             provider_response_id=data.get("id") or None, provider_name="openai",
                             provider_url=IN_PROCESS_BASE_URL, finish_reason=_FINISH.get(raw_finish))  # type: ignore[arg-type]

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        """One chat completion through the gateway app.

        Raises:
            ModelHTTPError: the gateway answered an error status (its ``error`` object is the body).
            ModelTimeoutError: no answer within the run's ``timeout`` setting.
            UnexpectedModelBehavior: a 200 reply that is not a chat completion.
            UserError: a message part or setting this model does not map (see the module docstring).
        """
        check_allow_model_requests()
        settings, params = self.prepare_request(model_settings, model_request_parameters)
        settings = settings or {}
        status, headers, raw = await self._post(self._body(messages, settings, params), settings)
        if status >= 400:
            raise self._error(status, raw, headers)
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise UnexpectedModelBehavior("Invalid response from the gateway, expected JSON data") from exc
        if not isinstance(data, dict):
            raise ModelAPIError(model_name=self.model_name, message="the gateway's reply is not a JSON object")
        if self._on_provider is not None and headers.get("x-warden-provider"):
            self._on_provider(headers["x-warden-provider"], headers.get("x-warden-provider-kind", ""))
        return self._response(data)
