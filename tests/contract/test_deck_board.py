"""The board and uploads through both implementations of the Deck interface: the
tree of agents a client draws, and a file a chat user hands an agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.core.agent import AgentSpec
from agentdeck.core.deck import Deck
from agentdeck.errors import NotFound, UsageError
from tests.contract.helpers import idle_after, settled, unique

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


async def test_the_tree_has_each_root_then_everything_below_it(deck: Deck) -> None:
    name = unique("root")
    root = await deck.create_agent(AgentSpec(prompt="hello", name=name, scenario="chat"))
    await settled(deck, root.id, idle_after(1))

    board = await deck.tree(text=name)
    assert [a.id for a in board] == [root.id]  # no children: the root alone
    assert board[0] == await deck.get_agent(root.id)
    everyone = await deck.tree(limit=1000)
    assert root.id in [a.id for a in everyone]
    assert all(a.parent_id is None for a in await deck.tree(limit=1))
    await deck.kill(root.id)


async def test_an_upload_lands_in_the_workspace_and_a_hostile_name_is_refused(
    deck: Deck, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    agent = await deck.create_agent(
        AgentSpec(prompt="hello", name=unique("up"), scenario="chat", cwd=str(workspace))
    )
    await settled(deck, agent.id, idle_after(1))

    first = await deck.upload(agent.id, "notes.txt", b"one")
    second = await deck.upload(agent.name or agent.id, "notes.txt", b"two")
    assert (first, second) == ("uploads/notes.txt", "uploads/notes-2.txt")
    assert (workspace / first).read_bytes() == b"one"
    assert (workspace / second).read_bytes() == b"two"

    for hostile in ("../escape.txt", "a/b.txt", "", ".."):
        with pytest.raises(UsageError):
            await deck.upload(agent.id, hostile, b"x")
    assert not (workspace / "escape.txt").exists()
    assert not (tmp_path / "escape.txt").exists()
    with pytest.raises(NotFound):
        await deck.upload("no-such-agent", "notes.txt", b"x")
    await deck.kill(agent.id)
