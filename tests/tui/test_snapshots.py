"""SVG snapshots of the TUI's screens (pytest-textual-snapshot), on fixed data.

The app is the real one; only where its data comes from differs: no daemon answers
(so the top line says ``reconnecting``, as it does when the daemon goes away) and the
board, inbox and transcript are filled with fixed records (the core's ``Agent``,
``Approval``, ``Ask``, ``StoredEvent``) as the deck would give them. Update after a
reviewed change: ``pytest tests/tui/test_snapshots.py --snapshot-update``; the SVGs
are under ``__snapshots__/``.
"""

from __future__ import annotations

import time
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.approvals import Approval, ApprovalState
from agentdeck.core.asks import Ask, AskKind, AskState
from agentdeck.core.events import StoredEvent
from agentdeck.errors import DaemonUnavailable
from agentdeck.tui.app import DeckApp
from agentdeck.tui.link import Endpoint
from agentdeck.tui.transcript import TranscriptView

AGE = 42.3  # seconds: every agent is "42s" old on screen


class Nowhere:
    """A locator that finds no daemon, always with the same words."""

    where = "~/.agentdeck"

    def __call__(self) -> Endpoint:
        raise DaemonUnavailable("no daemon here (a snapshot)")


def agent(id_: str, name: str, state: str, *, at: float, **kw: Any) -> Agent:
    """An agent as the deck gives it (only what the table shows is set)."""
    return Agent(
        id=id_, name=name, state=AgentState(state), spec=AgentSpec(prompt="go"), cwd="/tmp",
        created_at=at, updated_at=at, parent_id=kw.get("parent"),
        current_tool=kw.get("tool"), turns=kw.get("turns", 0), cost_usd=kw.get("cost", 0.0),
    )  # fmt: skip


def agents(now: float) -> list[Agent]:
    def one(id_: str, name: str, state: str, **kw: Any) -> Agent:
        return agent(id_, name, state, at=now - AGE - kw.pop("older", 0), **kw)

    return [
        one("lead0001", "lead", "awaiting_agents", tool="mcp__deck__wait_for_agents", turns=2,
            cost=0.2174, older=2),
        one("writ0002", "writer", "done", parent="lead0001", turns=2, cost=0.1087, older=1),
        one("test0003", "tester", "awaiting_input", parent="lead0001",
            tool="mcp__deck__ask_orchestrator", turns=1, cost=0.0561),
        one("fixr0004", "fixer", "awaiting_permission", tool="Bash", turns=3, cost=0.3012,
            older=-1),
    ]  # fmt: skip


TRANSCRIPT = [
    ("agent_spawned", {"name": "fixer", "spec": {"prompt": "fix the failing test"}}),
    ("user_message_sent", {"text": "fix the failing test"}),
    ("assistant_text", {"text": "Let me run the **tests** first, then read `calc.py`."}),
    ("tool_called", {"tool": "Bash", "tool_use_id": "t1",
                     "input": {"command": "python3 -m pytest -q"}}),
    ("tool_returned", {"tool_use_id": "t1", "output": "1 failed, 3 passed in 0.12s", "size": 27}),
    ("tool_called", {"tool": "Read", "tool_use_id": "t2", "input": {"file_path": "calc.py"}}),
    ("tool_returned", {"tool_use_id": "t2", "output": "def add(a, b):\n    return a - b\n",
                       "size": 31}),
    ("assistant_text", {"text": "The bug:\n\n- `add` *subtracts*\n- the fix is one character"}),
    ("permission_requested", {"tool": "Bash", "input": {"command": "git commit -am fix"},
                              "request_id": "apr1"}),
]  # fmt: skip

INBOX: list[Approval | Ask] = [
    Approval(id="apr1", agent_id="fixr0004", tool="Bash",
             input={"command": "git commit -am fix"}, reason="asks", grant_key="Bash",
             state=ApprovalState.PENDING, created_at=0.0, expires_at=0.0),
    Ask(id="ask1", kind=AskKind.QUESTION, agent_id="test0003", to_agent_id=None,
        text="Should the greeting end with an exclamation mark ('Hello, Ada!') or not?",
        state=AskState.PENDING, created_at=0.0, expires_at=0.0),
]  # fmt: skip


async def fill(pilot: Pilot[None]) -> None:
    app = pilot.app
    assert isinstance(app, DeckApp)
    app.board.load(agents(time.time()))
    app.selected = "fixr0004"  # as if picked: no transcript read (no daemon to read it from)
    app._redraw = True
    app._flush_board()
    app.query_one("#transcript", TranscriptView).reset()
    for i, (kind, data) in enumerate(TRANSCRIPT, start=1):
        app.loader.write(StoredEvent(id=i, agent_id="fixr0004", type=kind, ts=0.0, data=data))
    app.inbox = INBOX
    app._draw_inbox()
    app._show_status()
    app.query_one("#message", Input).placeholder = "m: message fixer"
    await pilot.pause()


def test_the_main_screen_at_80x24(snap_compare: Any) -> None:
    assert snap_compare(DeckApp(Nowhere()), run_before=fill, terminal_size=(80, 24))


def test_the_main_screen_at_120x36(snap_compare: Any) -> None:
    assert snap_compare(DeckApp(Nowhere()), run_before=fill, terminal_size=(120, 36))


def test_deny_asks_for_a_reason(snap_compare: Any) -> None:
    async def deny(pilot: Pilot[None]) -> None:
        await fill(pilot)
        await pilot.press("d")
        pilot.app.screen.query_one(Input).cursor_blink = False
        await pilot.press(*"not on main")

    assert snap_compare(DeckApp(Nowhere()), run_before=deny, terminal_size=(80, 24))


def test_kill_asks_first(snap_compare: Any) -> None:
    async def kill(pilot: Pilot[None]) -> None:
        await fill(pilot)
        await pilot.press("k")

    assert snap_compare(DeckApp(Nowhere()), run_before=kill, terminal_size=(80, 24))


def test_the_main_screen_in_a_light_terminal(snap_compare: Any) -> None:
    async def light(pilot: Pilot[None]) -> None:
        pilot.app.theme = "textual-light"
        await fill(pilot)

    assert snap_compare(DeckApp(Nowhere()), run_before=light, terminal_size=(100, 30))


def test_the_readme_screenshot_is_the_current_main_screen() -> None:
    """``docs/tui.svg`` is what ``scripts/tui_screenshot.py`` draws from this file's data."""
    import asyncio
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "scripts"))
    try:
        from tui_screenshot import OUT, screenshot
    finally:
        sys.path.pop(0)
    assert OUT.read_text() == asyncio.run(screenshot()), (
        "docs/tui.svg is stale: run `python scripts/tui_screenshot.py`"
    )
