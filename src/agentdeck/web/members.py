"""What a named user or chat member does to an agent goes to the audit log.

A chat bridge names the member behind each call (``X-Agentdeck-Actor``, see
``auth.channel_of``); every other call carries its user (``request.state.user``).
Answers to approvals and questions are audited where they are decided; the other
acts (start an agent, send it a message, interrupt, stop or resume it, give it a
file) are audited here, as ``chat:<act>`` entries for a chat member and ``act:<act>``
for anyone else, in the same hash chain: who (``answered_by``), which agent, when,
and a digest of what was sent (never the text itself).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from fastapi import Request

from agentdeck.core.audit import AuditDecision, AuditRecord
from agentdeck.daemon.deck import Deck
from agentdeck.web.auth import channel_of

MEMBER = "user:bridge:"


async def audit_member_act(
    request: Request,
    agent_id: str,
    act: str,
    detail: Mapping[str, Any],
    *,
    by: str | None = None,
) -> None:
    """An audit entry for ``act`` on the agent, when someone named asked for it."""
    by = by or channel_of(request)
    member = by.startswith(MEMBER)
    if not member and by.count(":") < 2:  # no user known: nobody to name
        return
    deck: Deck = request.app.state.deck
    await deck.audit(
        AuditRecord.for_input(
            agent_id=agent_id,
            tool=f"chat:{act}" if member else f"act:{act}",
            tool_input=detail,
            decision=AuditDecision.ALLOWED,
            reason=f"{act} from chat" if member else f"{act} by {by}",
            ts=time.time(),
            answered_by=by,
        )
    )
