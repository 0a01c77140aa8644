"""The palette's commands come from the daemon, read as the palette opens; on a busy
machine that reading outlasts the first keys typed. Each key starts a new search and
cancels the one before: the reading must survive that, and the hits come once it is
done (no daemon needed: the deck's reads wait on a gate, the board is filled as the
snapshots fill it)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from textual.command import CommandList

from agentdeck.core.checkpoint import Checkpoint
from agentdeck.core.knowledge import TemplateCatalog
from agentdeck.core.templates import Template
from agentdeck.tui.app import DeckApp
from tests.support.waiting import eventually
from tests.tui.given import GivenDeck, Offline
from tests.tui.test_snapshots import fill

pytestmark = pytest.mark.anyio


class SlowDeck(Offline):
    """The daemon's answers for the palette, held back until ``gate`` opens."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.reads: list[str] = []

    async def templates(self, project: str | None = None) -> TemplateCatalog:
        self.reads.append("templates")
        await self.gate.wait()
        reviewer = Template(name="reviewer", description="reads a change", prompt="review")
        return TemplateCatalog(templates=(reviewer,))

    async def checkpoints(self, ref: str) -> list[Checkpoint]:
        self.reads.append(f"checkpoints {ref}")
        await self.gate.wait()
        return [Checkpoint(n=1, commit="c0", ts=0.0, tool="Edit", tool_use_id="t1",
                           summary="Edit calc.py")]  # fmt: skip


async def _hits(pilot: Any) -> list[str] | None:
    await pilot.pause()
    found = pilot.app.screen.query(CommandList)
    if not found or not found.first().option_count:
        return None
    listed = found.first()
    return [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]


async def test_keys_typed_while_the_commands_are_read_find_them_once_read() -> None:
    client = SlowDeck()
    app = DeckApp(GivenDeck(client))
    async with app.run_test(size=(100, 30)) as pilot:
        await fill(pilot)
        await pilot.press("ctrl+p")
        await eventually(lambda: _true(client.reads), what="the palette reading the daemon")
        await pilot.press(*"diff of fixer")  # each key cancels the search before it
        client.gate.set()
        hits = await eventually(lambda: _hits(pilot), what="a palette hit for 'diff of fixer'")
        assert any("diff of fixer" in hit for hit in hits), hits
        # The commands were read once, when the palette opened, not once per key.
        assert client.reads == ["templates", "checkpoints fixr0004"]
        await pilot.press("ctrl+u", *"rewind")
        hits = await eventually(lambda: _hits(pilot), what="a hit for 'rewind'")
        assert any("rewind fixer to checkpoint 1" in hit for hit in hits), hits


async def _true(value: Any) -> Any:
    return value
