"""Memories the agents write, in the store, on SQLite and PostgreSQL: the flood cap
holds under calls at once, a decision only from the state it was read in, and the
accepted ones of one template in one project, newest first."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from agentdeck.core.memory_proposals import MemoryProposal, ProposalState, decided, propose
from agentdeck.errors import InvalidState, NotFound, Refused
from agentdeck.store.memory_proposals import ProposalStore
from agentdeck.store.store import Store

pytestmark = pytest.mark.anyio


def made(text: str, *, agent: str = "a1", template: str = "t", project: str = "/p",
         auto: bool = False, now: float = 1.0) -> MemoryProposal:  # fmt: skip
    return propose(
        agent_id=agent, template=template, project=project, text=text, kind="fact",
        auto=auto, now=now,
    )  # fmt: skip


async def test_the_cap_holds_for_calls_at_once_and_per_agent(store: Store) -> None:
    records = ProposalStore(store)
    tries = [records.add(made(f"m{i}"), pending_cap=5) for i in range(9)]
    outcomes = await asyncio.gather(*tries, return_exceptions=True)
    assert sum(isinstance(o, MemoryProposal) for o in outcomes) == 5
    assert all(isinstance(o, Refused) for o in outcomes if not isinstance(o, MemoryProposal))
    await records.add(made("other agent", agent="a2"), pending_cap=5)  # its own cap
    await records.add(made("accepted at once", auto=True), pending_cap=5)  # counts nothing
    assert len(await records.listed(ProposalState.PENDING)) == 6
    assert len(await records.listed(None)) == 7


async def test_a_decision_only_from_the_state_it_was_read_in(store: Store) -> None:
    records = ProposalStore(store)
    kept = await records.add(made("x"), pending_cap=5)
    assert await records.get(kept.id) == kept
    accepted = decided(kept, ProposalState.ACCEPTED, by="user:cli", now=2.0)
    await records.update(accepted, was=(ProposalState.PENDING,), operation="accept")
    with pytest.raises(InvalidState, match="is accepted; cannot accept"):
        await records.update(accepted, was=(ProposalState.PENDING,), operation="accept")
    with pytest.raises(NotFound):
        await records.get("mp000000000000")
    ghost = dataclasses.replace(kept, id="mp000000000000")
    with pytest.raises(NotFound):
        await records.update(ghost, was=(ProposalState.PENDING,), operation="accept")


async def test_accepted_ones_of_a_template_in_a_project_newest_first(store: Store) -> None:
    records = ProposalStore(store)
    for text, template, project, now in (
        ("old", "t", "/p", 1.0), ("new", "t", "/p", 3.0), ("other-template", "u", "/p", 2.0),
        ("other-project", "t", "/q", 2.0),
    ):  # fmt: skip
        await records.add(made(text, template=template, project=project, auto=True, now=now),
                          pending_cap=5)  # fmt: skip
    await records.add(made("pending", now=4.0), pending_cap=5)
    found = await records.accepted("t", "/p", limit=10)
    assert [m.text for m in found] == ["new", "old"]
    assert [m.text for m in await records.accepted("t", "/p", limit=1)] == ["new"]
