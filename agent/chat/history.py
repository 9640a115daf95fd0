"""A chat session's history: its turns and its pydantic-ai message history, kept in the run store.

Two tables beside the run store's own (same SQLite file, through sqlite-utils):

    chat_sessions  run_id (the session's first run) · target · model · current_run (the Diagnosis the
                   plans refer to) · messages_json (pydantic-ai's ModelMessagesTypeAdapter) · updated_at
    chat_turns     run_id · seq · at · role (user | warden) · kind (diagnosis | followup | command) ·
                   answered_by (diagnosis | warden | model | command) · text

``warden chat --resume RUN`` reads both back. :func:`trim_history` keeps a message history within a
character budget by dropping whole turns from the oldest, never splitting a tool call from its result.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timezone

from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai.messages import ModelMessage, ModelRequest, RetryPromptPart, ToolReturnPart, UserPromptPart

from agent.store import RunStore

__all__ = ["ChatTurn", "ChatLog", "trim_history", "HISTORY_CHARS", "history_chars"]

HISTORY_CHARS = 80_000
"""Characters of message history (as JSON) sent with a follow-up: about 20,000-30,000 tokens, well
inside the loop limits' token budget, with room for the follow-up's own tool results."""


@dataclass(frozen=True)
class ChatTurn:
    """One line of the conversation as it was shown."""

    seq: int
    at: str
    role: str
    kind: str
    answered_by: str
    text: str


def history_chars(messages: list[ModelMessage]) -> int:
    """Size of ``messages`` as JSON characters (what the budget counts)."""
    return len(ModelMessagesTypeAdapter.dump_json(messages))


def _turn_starts(messages: list[ModelMessage]) -> list[int]:
    """Indexes of the requests that open a turn (carry the engineer's question)."""
    return [i for i, m in enumerate(messages)
            if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)]


def trim_history(messages: list[ModelMessage], max_chars: int = HISTORY_CHARS) -> list[ModelMessage]:
    """The newest whole turns of ``messages`` that fit in ``max_chars`` (the newest turn always).

    A turn runs from a request carrying a user prompt to the next such request, so a tool call and
    its result always stay together and the history still starts with a request. pydantic-ai puts a
    new question in the same request as the previous turn's last tool result (the output tool's
    "Final result processed."): when the kept history starts there, that result, whose call was
    dropped, is dropped too, since a tool result without its call is refused by model APIs.
    """
    starts = _turn_starts(messages)
    if not starts or history_chars(messages) <= max_chars:
        return list(messages)
    bounds = list(zip(starts, starts[1:] + [len(messages)]))
    kept: list[ModelMessage] = []
    used = 0
    for begin, end in reversed(bounds):
        turn = messages[begin:end]
        size = history_chars(turn)
        if kept and used + size > max_chars:
            break
        kept = turn + kept
        used += size
    first = kept[0]
    if isinstance(first, ModelRequest) and any(isinstance(p, (ToolReturnPart, RetryPromptPart)) for p in first.parts):
        parts = [p for p in first.parts if not isinstance(p, (ToolReturnPart, RetryPromptPart))]
        kept[0] = dataclasses.replace(first, parts=parts)
    return kept


class ChatLog:
    """The chat tables of one run store."""

    def __init__(self, store: RunStore) -> None:
        self.db = store.db
        self.db["chat_sessions"].create({"run_id": str, "target": str, "model": str, "current_run": str,
                                         "messages_json": str, "updated_at": str}, pk="run_id", if_not_exists=True)
        self.db["chat_turns"].create({"run_id": str, "seq": int, "at": str, "role": str, "kind": str,
                                      "answered_by": str, "text": str}, pk=("run_id", "seq"), if_not_exists=True)

    def save(self, run_id: str, *, target: str, model: str, current_run: str, messages: list[ModelMessage]) -> None:
        """Record (or replace) the session's state."""
        self.db["chat_sessions"].upsert({"run_id": run_id, "target": target, "model": model, "current_run": current_run,
                                         "messages_json": ModelMessagesTypeAdapter.dump_json(messages).decode(),
                                         "updated_at": datetime.now(timezone.utc).isoformat()}, pk="run_id")

    def add_turn(self, run_id: str, *, role: str, kind: str, answered_by: str, text: str) -> ChatTurn:
        """Append one turn; returns it with its sequence number."""
        row = self.db.execute("select max(seq) from chat_turns where run_id = ?", [run_id]).fetchone()
        seq = (row[0] or 0) + 1
        turn = ChatTurn(seq=seq, at=datetime.now(timezone.utc).isoformat(), role=role, kind=kind,
                        answered_by=answered_by, text=text)
        self.db["chat_turns"].insert({"run_id": run_id, **turn.__dict__})
        return turn

    def session(self, run_id: str) -> dict[str, str] | None:
        """The stored session row (``current_run``, ``model``, ``target``), or None."""
        rows = list(self.db["chat_sessions"].rows_where("run_id = ?", [run_id]))
        return rows[0] if rows else None

    def messages(self, run_id: str) -> list[ModelMessage]:
        """The stored message history ([] when there is none)."""
        row = self.session(run_id)
        return list(ModelMessagesTypeAdapter.validate_json(row["messages_json"])) if row else []

    def turns(self, run_id: str) -> list[ChatTurn]:
        """The session's turns, oldest first."""
        return [ChatTurn(seq=r["seq"], at=r["at"], role=r["role"], kind=r["kind"], answered_by=r["answered_by"],
                         text=r["text"]) for r in self.db["chat_turns"].rows_where("run_id = ?", [run_id], order_by="seq")]
