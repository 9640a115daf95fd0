"""The built-in offline diagnostician: a deterministic "model" that speaks the chat-completions format."""

from gateway.builtin.diagnostician import respond

__all__ = ["respond"]
