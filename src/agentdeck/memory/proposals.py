"""Memories the agents write: the deck's ``remember`` tool keeps a proposal, a
person accepts (or edits, or rejects) it, and later agents of the same template
in the same project are told the accepted ones (``core.memory_proposals``).

Whether a template's proposals skip review (``memory_review: auto``) is the
caller's to say (it resolves templates; memory does not read them). A project
whose memory is off (``Memory.enabled_for``) keeps no proposal.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from agentdeck.core.agent import Agent
from agentdeck.core.events import Notice
from agentdeck.core.memory_proposals import (
    LIST_MAX,
    PENDING_PER_AGENT,
    MemoryProposal,
    ProposalState,
    checked_id,
    checked_kind,
    checked_state,
    checked_text,
    decided,
    propose,
)
from agentdeck.core.worktree import Worktree
from agentdeck.errors import Refused, UsageError
from agentdeck.memory.projects import project_of
from agentdeck.store.memory_proposals import ProposalStore
from agentdeck.store.store import Store

LEARNED_MAX = 50  # accepted memories read for one agent's start


def agent_project(agent: Agent) -> str:
    """Where an agent's memories belong: its directory; in a worktree, its
    repository (as ``runner.memory_hooks`` files its observations)."""
    worktree = Worktree.from_extra(agent.extra)
    return project_of(worktree.repo if worktree is not None else agent.cwd)


class Proposals:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.records = ProposalStore(store)

    async def remember(
        self, agent: Agent, text: Any, kind: Any, *, auto: bool, enabled: bool
    ) -> MemoryProposal:
        """``agent``'s proposal, kept (pending, or accepted when ``auto``). Refused
        when its project's memory is off (``enabled`` False) or it has too many
        waiting already."""
        if not enabled:
            raise Refused(
                "memory is off for this project; nothing was kept",
                hint="a person turns it on (AGENTDECK_MEMORY_ENABLED, .agentdeck/ignore)",
            )
        proposal = propose(
            agent_id=agent.id,
            template=agent.spec.template,
            project=agent_project(agent),
            text=text,
            kind=kind,
            auto=auto,
        )
        await self.records.add(proposal, pending_cap=PENDING_PER_AGENT)
        said = "accepted (the template reviews none)" if auto else "waiting for review"
        await self.store.append(
            [
                Notice(
                    agent_id=agent.id,
                    ts=proposal.created_at,
                    kind="memory_proposed",
                    message=f"proposed memory {proposal.id} ({proposal.kind}), {said}",
                    detail={"memory_id": proposal.id, "state": str(proposal.state)},
                )
            ]
        )
        return proposal

    async def listed(self, state: str | None = "pending", limit: int = 100) -> list[MemoryProposal]:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LIST_MAX:
            raise UsageError(f"a limit is 1 to {LIST_MAX}, not {limit!r}")
        return await self.records.listed(checked_state(state), limit=limit)

    async def get(self, proposal_id: str) -> MemoryProposal:
        return await self.records.get(checked_id(proposal_id))

    async def accept(self, proposal_id: str, *, by: str) -> MemoryProposal:
        current = await self.get(proposal_id)
        made = decided(current, ProposalState.ACCEPTED, by=by, now=time.time())
        return await self.records.update(made, was=(ProposalState.PENDING,), operation="accept")

    async def reject(self, proposal_id: str, *, by: str) -> MemoryProposal:
        """A pending one is turned down; an accepted one is withdrawn (later agents
        are no longer told it)."""
        current = await self.get(proposal_id)
        made = decided(current, ProposalState.REJECTED, by=by, now=time.time())
        was = (ProposalState.PENDING, ProposalState.ACCEPTED)
        return await self.records.update(made, was=was, operation="reject")

    async def edit(
        self, proposal_id: str, *, text: str | None = None, kind: str | None = None
    ) -> MemoryProposal:
        """A person's rewording of a pending or accepted memory (scrubbed as the
        model's was); its state stays."""
        if text is None and kind is None:
            raise UsageError("an edit gives a new text, a new kind or both")
        current = await self.get(proposal_id)
        made = replace(
            current,
            text=current.text if text is None else checked_text(text),
            kind=current.kind if kind is None else checked_kind(kind),
            edited=True,
        )
        was = (ProposalState.PENDING, ProposalState.ACCEPTED)
        return await self.records.update(made, was=was, operation="edit")

    async def learned(self, template: str, project: str) -> list[MemoryProposal]:
        return await self.records.accepted(template, project, limit=LEARNED_MAX)
