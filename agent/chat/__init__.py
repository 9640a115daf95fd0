"""`warden chat`: an interactive session over one incident, snapshot or live collection.

The first question runs a diagnosis (agent.diagnose.run_agent); follow-ups reuse its evidence and
conversation (agent.chat.session); plans are approved through Warden's approval flow
(agent.chat.approve); turns and the message history live in the run store (agent.chat.history).
"""

from agent.chat.session import ChatSession, Reply
from agent.chat.start import ChatStart, open_chat

__all__ = ["ChatSession", "ChatStart", "Reply", "open_chat"]
