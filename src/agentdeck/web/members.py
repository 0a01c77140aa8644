"""What a named chat member does to an agent through the API goes to the audit log.

A chat bridge names the member behind each call (``X-Agentdeck-Actor``, see
``auth.channel_of``). Answers to approvals and questions are audited where they are
decided; the other acts a member can take from chat (start an agent, send it a
message, interrupt, stop or resume it, give it a file) are audited here, as
``chat:<act>`` entries of the same hash chain: who (``answered_by``), which agent,
when, and a digest of what was sent (never the text itself).
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
    request: Request, agent_id: str, act: str, detail: Mapping[str, Any]
) -> None:
    """An audit entry for ``act`` on the agent when a named member asked for it."""
    by = channel_of(request)
    if not by.startswith(MEMBER):
        return
    deck: Deck = request.app.state.deck
    await deck.store.append_audit(
        AuditRecord.for_input(
            agent_id=agent_id,
            tool=f"chat:{act}",
            tool_input=detail,
            decision=AuditDecision.ALLOWED,
            reason=f"{act} from chat",
            ts=time.time(),
            answered_by=by,
        )
    )
