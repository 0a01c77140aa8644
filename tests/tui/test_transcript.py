"""The transcript pane against a real daemon (``agentdeck up``) serving a long log:
Markdown, tool calls that open and close, paged output, older pages on scroll-up,
a capped pane, and back to the newest."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import AssistantText, ToolCalled, ToolReturned, spawned_events
from agentdeck.core.ids import new_agent_id
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from agentdeck.tui import transcript as transcript_module
from agentdeck.tui.app import DeckApp
from agentdeck.tui.entries import OUTPUT_PAGE_LINES
from agentdeck.tui.link import HomeLocator
from agentdeck.tui.transcript import TranscriptView
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck_env
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

ROUNDS = 600  # 3 events each: 1,800 events, 9 pages of 200
OUTPUT_LINES = 100


async def seed(home: Path) -> str:
    """One agent whose log is ``ROUNDS`` of: Markdown text, a Bash call, its output."""
    settings = Settings(home=home)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    now = time.time()
    agent = Agent(
        id=new_agent_id(), name="long", state=AgentState.DONE, spec=AgentSpec(prompt="go"),
        cwd="/tmp", created_at=now, updated_at=now,
    )  # fmt: skip
    output = "\n".join(f"out {n}" for n in range(OUTPUT_LINES))
    try:
        await store.record(spawned_events(agent), agent)
        for r in range(ROUNDS):
            await store.append(
                [
                    AssistantText(agent_id=agent.id, ts=now, text=f"round **{r}** of `work`"),
                    ToolCalled(agent_id=agent.id, ts=now, tool_use_id=f"t{r}", tool="Bash",
                               input={"command": f"step {r}"}),
                    ToolReturned(agent_id=agent.id, ts=now, tool_use_id=f"t{r}",
                                 output=output, size=len(output)),
                ]
            )  # fmt: skip
    finally:
        await store.close()
    return agent.id


async def _true(value: Any) -> Any:
    return value


async def test_a_long_transcript_opens_at_its_end_and_pages_back(
    tmp_path: Path, daemons: list[Daemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    env = deck_env(tmp_path)
    agent_id = await seed(Path(env["AGENTDECK_HOME"]))
    monkeypatch.setattr(transcript_module, "MAX_ENTRIES", 300)
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    app = DeckApp(HomeLocator(daemon.home))
    async with app.run_test(size=(100, 40)) as pilot:
        view = app.query_one("#transcript", TranscriptView)
        await eventually(lambda: _true(app.selected == agent_id), what="the agent selected")
        await eventually(lambda: _true(f"⚙ Bash(step {ROUNDS - 1})" in view.text), what="it")
        # The newest page only: 200 events, text and calls paired into one entry each.
        assert "step 0)" not in view.text and len(view.entries) <= 200
        assert view.older is not None and not view.detached
        # Markdown is rendered: no asterisks or backquotes, the number in bold.
        last = f"round {ROUNDS - 1} of work"
        assert last in view.text and "**" not in view.text and "`" not in view.text
        line = next(s for s in view._lines if last in s.text)
        assert any(seg.style and seg.style.bold for seg in line if seg.text == str(ROUNDS - 1))

        # A tool call is one line; Enter opens it with a page of its output, ] and [
        # page through it, Enter closes it again.
        await pilot.press("t")
        assert view.has_focus
        await pilot.press("up")
        entry = view.entries[view.cursor or 0]
        assert entry.kind == "tool" and entry.input == {"command": f"step {ROUNDS - 1}"}
        assert "out 0" not in view.text
        await pilot.press("enter")
        assert entry.expanded and "│ out 0" in view.text and '"command"' in view.text
        assert f"│ out {OUTPUT_PAGE_LINES}" not in view.text
        assert f"lines 1-{OUTPUT_PAGE_LINES} of {OUTPUT_LINES}" in view.text
        await pilot.press("right_square_bracket")
        assert f"│ out {OUTPUT_PAGE_LINES}" in view.text and "│ out 0\n" not in view.text
        await pilot.press("left_square_bracket")
        assert "│ out 0" in view.text
        await pilot.press("enter")
        assert not entry.expanded and "│ out 0" not in view.text
        # A click opens one too.
        await pilot.pause()
        row = [i for i, s in enumerate(view._lines) if "▸ ⚙ Bash" in s.text][-3]
        clicked = view.entries[view._owner[row]]
        view.scroll_to(y=row, animate=False, immediate=True)
        await pilot.pause()
        shown_at = row - view.scroll_offset.y + 1  # the border is row 0
        await pilot.click("#transcript", offset=(5, shown_at))
        assert clicked.expanded and clicked.kind == "tool" and "│ out 0" in view.text

        # Scrolling to the top reads the page before, and the one before that...
        # The pane never holds more than its cap; holding older ones, it drops the newest.
        pages = 0
        while view.older is not None:
            view.scroll_to(y=5, animate=False, immediate=True)
            view.scroll_home(animate=False, immediate=True)
            await eventually(lambda: _true(not view.fetching), what="an older page")
            await pilot.pause()
            pages += 1
            assert len(view.entries) <= 300
        assert pages >= 4
        assert "round 0 of work" in view.text and "⚙ Bash(step 0)" in view.text
        assert view.detached and f"Bash(step {ROUNDS - 1})" not in view.text
        # A call and its result split across two pages are one entry again.
        assert "⎿" not in view.text

        # End: the newest page again, following live events.
        await pilot.press("end")
        await eventually(
            lambda: _true(f"Bash(step {ROUNDS - 1})" in view.text and not view.detached),
            what="the newest page again",
        )
        assert "step 0)" not in view.text
