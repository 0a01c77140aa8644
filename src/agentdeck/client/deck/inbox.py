"""``RemoteDeck``'s inbox: ``/api/approvals`` and ``/api/asks``."""

from __future__ import annotations

from typing import Any

from agentdeck.client.deck.base import RemoteBase, api_path, field, inbox_limit, with_agent
from agentdeck.core.approvals import Approval, ApprovalState, GrantScope
from agentdeck.core.asks import Ask, AskState


class RemoteInbox(RemoteBase):
    async def approvals(
        self,
        *,
        states: list[ApprovalState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        # The API lists pending requests when no state is named: every state is named.
        wanted = [str(s) for s in (states or list(ApprovalState))]
        params = with_agent({"state": wanted, "limit": inbox_limit(limit)}, agent_id)
        answer = await self.http.call("GET", "/api/approvals", params=params)
        return [Approval.from_dict(a) for a in field(answer, "approvals")]

    async def approval(self, ref: str) -> Approval:
        return Approval.from_dict(await self.http.call("GET", api_path("approvals", ref)))

    async def answer(
        self,
        ref: str,
        decision: str,
        *,
        message: str | None = None,
        remember: GrantScope | None = None,
    ) -> Approval:
        body: dict[str, Any] = {"decision": decision, "message": message}
        if remember is not None:
            body.update(always=True, scope=str(remember))
        return Approval.from_dict(
            await self.http.call("POST", api_path("approvals", ref), json=body)
        )

    async def asks(
        self,
        *,
        states: list[AskState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Ask]:
        wanted = [str(s) for s in (states or list(AskState))]
        params = with_agent({"state": wanted, "limit": inbox_limit(limit)}, agent_id)
        answer = await self.http.call("GET", "/api/asks", params=params)
        return [Ask.from_dict(a) for a in field(answer, "asks")]

    async def ask(self, ref: str) -> Ask:
        return Ask.from_dict(await self.http.call("GET", api_path("asks", ref)))

    async def answer_ask(self, ref: str, answer: str) -> Ask:
        body = {"answer": answer}
        return Ask.from_dict(await self.http.call("POST", api_path("asks", ref), json=body))
