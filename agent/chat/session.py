"""One chat session: the first question diagnoses, follow-ups reuse the same evidence and conversation.

    ask(q) ─ no diagnosis yet ──► run_agent (the diagnosis agent; a run in the run store) ──► Diagnosis
           └ follow-up ─ an LLM alias ──► agent.chat.converse (history, read tools, loop limits)
                         │                 └─ model failed / stopped ──► Warden's own answer
                         └ the built-in model ──► Warden's own answer (agent.chat.followups), else a
                                                  new diagnosis of the question over the same evidence

The ReadContext is built once per session: its Facts are parsed once and every answer reads them.
Every turn is kept in the run store (agent.chat.history), so ``warden chat --resume RUN`` continues it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import Model

from agent.audit import AuditLog
from agent.chat.converse import FollowupStopped, ask_model
from agent.chat.followups import answer_followup
from agent.chat.history import ChatLog
from agent.deps import WardenDeps
from agent.diagnose import run_agent
from agent.limits import LoopLimits
from agent.store import RunStore
from agent.gateway_setup import load_gateway_config
from gateway.config import BUILTIN_MODEL, GatewayConfig
from tools.models.findings import Diagnosis
from tools.read.context import ReadContext

__all__ = ["Reply", "ChatSession"]

AnsweredBy = Literal["diagnosis", "warden", "model", "command"]


@dataclass
class Reply:
    """What Warden answered (``text`` is raw: clean it where it is shown)."""

    text: str
    by: AnsweredBy
    diagnosis: Diagnosis | None = None
    """Set when the answer is a (new) Diagnosis."""
    note: str | None = None
    """One line about how it was answered (a model failure, a loop limit, a fresh diagnosis)."""


@dataclass
class ChatSession:
    """State of one session; see the module docstring.

    Args:
        ctx: the evidence (snapshot replay or one live collection), shared by every turn.
        target: what the run store records as the run's target (a path, ``live:<cluster>``).
        root: the snapshot directory evidence paths are relative to (None live).
        model: gateway alias; ``model_override`` replaces the gateway model (tests: FunctionModel).
    """

    ctx: ReadContext
    target: str
    store: RunStore
    audit: AuditLog
    requester: str
    root: Path | None = None
    model: str = BUILTIN_MODEL
    model_override: Model | None = None
    limits: LoopLimits = field(default_factory=LoopLimits)
    run_id: str | None = None
    """The session's id: its first run."""
    diagnosis: Diagnosis | None = None
    """The Diagnosis plans refer to (the latest one)."""
    history: list[ModelMessage] = field(default_factory=list)
    gateway_config: GatewayConfig | None = None
    """The gateway config; None reads ``$WARDEN_HOME/gateway.toml`` (if any) on first use."""
    _log: ChatLog | None = field(default=None, init=False)

    @property
    def log(self) -> ChatLog:
        """The chat tables of the run store."""
        if self._log is None:
            self._log = ChatLog(self.store)
        return self._log

    def deps(self) -> WardenDeps:
        """Dependencies for Warden's own read-tool calls in this session (audited, in the run store)."""
        return WardenDeps(read=self.ctx, store=self.store, run_id=self.run_id, audit=self.audit)

    def gateway(self) -> GatewayConfig:
        """The gateway config (``$WARDEN_HOME/gateway.toml`` when it exists), read once.

        Raises:
            ConfigError: the config is invalid.
        """
        if self.gateway_config is None:
            self.gateway_config = load_gateway_config()
        return self.gateway_config

    def _save(self, question: str, reply: Reply, kind: str) -> None:
        assert self.run_id is not None and self.diagnosis is not None
        self.log.add_turn(self.run_id, role="user", kind=kind, answered_by="user", text=question)
        self.log.add_turn(self.run_id, role="warden", kind=kind, answered_by=reply.by, text=reply.text)
        self.log.save(self.run_id, target=self.target, model=self.model, current_run=self.diagnosis.run_id or self.run_id,
                      messages=self.history)

    def _diagnose(self, question: str) -> tuple[Diagnosis, list[ModelMessage]]:
        gw = self.gateway() if self.model_override is None else None
        out = run_agent(self.ctx, question, model=self.model, model_override=self.model_override, store=self.store,
                        target=self.target, limits=self.limits, audit=self.audit, gateway_config=gw)
        assert out.diagnosis is not None  # no execution tool: a run cannot pause
        return out.diagnosis, list(ModelMessagesTypeAdapter.validate_json(out.messages_json)) if out.messages_json else []

    def ask(self, question: str) -> Reply:
        """Answer one question (see the module docstring).

        Raises:
            WardenError: the evidence cannot be read (first question only), the audit log cannot record.
        """
        if self.diagnosis is None:
            d, messages = self._diagnose(question)
            self.diagnosis, self.run_id, self.history = d, d.run_id, messages
            reply = Reply(text=d.summary, by="diagnosis", diagnosis=d)
            self._save(question, reply, "diagnosis")
            return reply
        reply = self._followup(question)
        if reply.by != "model":  # the model's own turn is in its history already; Warden's answers are added
            self.history += [ModelRequest(parts=[UserPromptPart(content=question)]),
                             ModelResponse(parts=[TextPart(content=reply.text)])]
        self._save(question, reply, "followup")
        return reply

    def _followup(self, question: str) -> Reply:
        assert self.diagnosis is not None
        if self.model != BUILTIN_MODEL or self.model_override is not None:
            try:
                text, self.history = ask_model(
                    question, self.diagnosis, self.deps(), alias=self.model, model_override=self.model_override,
                    gateway_config=self.gateway() if self.model_override is None else GatewayConfig(),
                    history=self.history, limits=self.limits)
                return Reply(text=text, by="model")
            except FollowupStopped as e:
                note = f"the model was stopped by a loop limit ({e.why}); Warden answers from the evidence"
            except Exception as e:  # noqa: BLE001 - a model or gateway failure: answer from the evidence instead
                note = f"the model failed ({type(e).__name__}: {' '.join(str(e).split())[:200]}); Warden answers"
            own = answer_followup(question, self.diagnosis, self.deps(), root=self.root, requester=self.requester)
            return Reply(text=own or "No answer from the evidence for that; try /evidence or /help.", by="warden",
                         note=note)
        own = answer_followup(question, self.diagnosis, self.deps(), root=self.root, requester=self.requester)
        if own is not None:
            return Reply(text=own, by="warden")
        d, _ = self._diagnose(question)  # the built-in model answers diagnosis questions: ask it this one
        self.diagnosis = d
        return Reply(text=d.summary, by="diagnosis", diagnosis=d,
                     note=f"a new diagnosis of this question over the same evidence (run {(d.run_id or '')[:12]}); "
                          "/plan N now refers to its fixes")

    def resume(self, run_id: str, diagnosis: Diagnosis) -> None:
        """Continue a stored session (or a plain diagnosis run) from the run store."""
        row = self.log.session(run_id)
        self.run_id = run_id
        self.diagnosis = diagnosis
        self.history = self.log.messages(run_id) if row else []

    def close(self) -> None:
        """Nothing stays open between turns (each opens and closes its gateway); kept for callers."""
