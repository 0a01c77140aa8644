"""The Deck interface: every operation a client (the CLI, the TUI, a bridge, an MCP
server) needs of the deck, whether it runs in this process or behind a daemon.

Two implementations satisfy it structurally: the daemon's ``Deck``
(``agentdeck.daemon.deck``, in-process: today's embedded mode) and ``RemoteDeck``
(``agentdeck.client.deck``, the daemon's HTTP API). Both answer with the same core
records (``Agent``, ``StoredEvent``, ``Approval``, ``Ask``) and raise the same
error classes (``agentdeck.errors``: ``NotFound`` for an unknown ref,
``InvalidState`` for a steer the agent's state refuses); the contract test
(``tests/contract``) runs one suite of operations against both.

Pure typing: it imports only core, so any client may import it cheaply.

Who acts is not an argument: the implementation knows it (the token's user behind
the API, the local user in-process), so a caller cannot claim to be someone else.
"""

from __future__ import annotations

from typing import Protocol

from agentdeck.core.deck.agents import AgentOps
from agentdeck.core.deck.changes import ChangeOps
from agentdeck.core.deck.events import EventOps
from agentdeck.core.deck.inbox import InboxOps
from agentdeck.core.deck.knowledge import KnowledgeOps
from agentdeck.core.deck.orchestration import OrchestrationOps
from agentdeck.core.deck.schedules import ScheduleOps
from agentdeck.core.deck.team import TeamOps


class Deck(
    AgentOps,
    EventOps,
    InboxOps,
    ChangeOps,
    KnowledgeOps,
    TeamOps,
    OrchestrationOps,
    ScheduleOps,
    Protocol,
):
    """The deck as a client sees it, one part per module of this package. ``ref`` is
    an agent's id, a unique id prefix or a unique name (an approval's or an ask's id
    for those)."""


__all__ = [
    "AgentOps",
    "ChangeOps",
    "Deck",
    "EventOps",
    "InboxOps",
    "KnowledgeOps",
    "OrchestrationOps",
    "ScheduleOps",
    "TeamOps",
]
