"""The TUI (Textual's ``run_test`` + Pilot) against a real daemon (``agentdeck up``)
running agents on the real Claude Code CLI and the scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.command import CommandPalette
from textual.widgets import Input

from agentdeck.core.approvals import Approval
from agentdeck.core.asks import Ask
from agentdeck.tui.agent_table import AgentTable
from agentdeck.tui.app import DeckApp
from agentdeck.tui.feed import FeedState
from agentdeck.tui.link import FixedLocator, HomeLocator
from agentdeck.tui.transcript import TranscriptView
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_env
from tests.support.governance import ask_profile_and_scenario
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return deck_env(tmp_path)


class BellCountingApp(DeckApp):
    """The app, counting the terminal bells it rings."""

    bells = 0

    def bell(self) -> None:
        self.bells += 1
        super().bell()


def cell(app: DeckApp, agent_id: str, column: str) -> str:
    table = app.screen_stack[0].query_one("#agents", AgentTable)  # even under a dialog
    if agent_id not in table.drawn:
        return ""
    return str(table.get_cell(agent_id, column))


def notices(app: DeckApp) -> list[str]:
    return [n.message for n in app._notifications]


def transcript(app: DeckApp) -> str:
    return app.screen_stack[0].query_one("#transcript", TranscriptView).text


async def test_live_table_inbox_answer_and_follow_up_at_80x24(
    env: dict[str, str], daemons: list[Daemon], tmp_path: Path
) -> None:
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    app = BellCountingApp(HomeLocator(daemon.home))
    async with app.run_test(size=(80, 24)) as pilot, daemon.api() as api:
        await eventually(
            lambda: _true(app.feed_state is FeedState.LIVE), timeout=30, what="a live stream"
        )
        profile, scenario = ask_profile_and_scenario(tmp_path)
        created = await api.post(
            "/api/agents",
            json={"prompt": "make it", "name": "maker", "scenario": scenario, "profile": profile},
        )
        assert created.status_code == 201, created.text
        agent_id = created.json()["id"]
        # The user is elsewhere in the app (the command palette): the approval still
        # rings and shows its notice there.
        await pilot.press("ctrl+p")
        assert isinstance(app.screen, CommandPalette)

        # The row appears from the event stream and follows the agent's state.
        await eventually(
            lambda: _true(cell(app, agent_id, "name") == "maker"), what="the agent's row"
        )
        await eventually(
            lambda: _true(cell(app, agent_id, "state") == "awaiting_permission"),
            timeout=60,
            what="the row to show the agent waiting",
        )
        # The approval is in the inbox with its keys on screen, and it rang.
        await eventually(lambda: _true(len(app.inbox) == 1), what="the approval in the inbox")
        (approval,) = app.inbox
        assert isinstance(approval, Approval)
        assert approval.tool == "Bash" and approval.agent_id == agent_id
        title = str(app.screen_stack[0].query_one("#inbox-title").render())
        assert "1 pending" in title and "allow" in title
        await eventually(
            lambda: _true(any("maker asks to run Bash(touch made.txt)" in n for n in notices(app))),
            what="a notice",
        )
        assert app.bells == 1
        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")
        await pilot.pause()  # the inbox's rows laid out

        # Everything fits in 80x24: each pane has room and nothing falls off screen.
        for selector, least in (("#agents", 3), ("#transcript", 3), ("#inbox", 1)):
            region = app.query_one(selector).region
            assert region.height >= least, (selector, region)
            assert region.bottom <= 24 and region.right <= 80, (selector, region)
        assert app.query_one("#message").region.bottom <= 23  # the footer below it

        await pilot.press("a")  # allow once
        await eventually(
            lambda: _true(cell(app, agent_id, "state") == "idle"),
            timeout=60,
            what="the agent to finish after the approval",
        )
        assert (Path(created.json()["cwd"]) / "made.txt").exists()
        await eventually(lambda: _true(not app.inbox), what="the inbox to empty")
        allowed = (await api.get("/api/approvals", params={"state": "allowed"})).json()
        assert allowed["approvals"][0]["answered_by"] == "user:tui:admin"
        await eventually(
            lambda: _true(cell(app, agent_id, "turns") != "0"), what="the turns to be counted"
        )

        # The transcript pane shows the selected agent, tool calls on one line.
        assert app.selected == agent_id
        await eventually(lambda: _true("Made it." in transcript(app)), what="the agent's text")
        assert "⚙ Bash(touch made.txt)" in transcript(app)

        # A follow-up typed in the TUI reaches the agent.
        await pilot.press("m")
        assert app.query_one("#message", Input).has_focus
        await pilot.press(*"once more", "enter")

        async def told() -> list[str]:
            events = (await api.get("/api/events", params={"agent": agent_id})).json()["events"]
            return [e["data"]["text"] for e in events if e["type"] == "user_message_sent"]

        await eventually(
            lambda: _contains(told(), "once more"), timeout=30, what="the follow-up in the log"
        )
        await eventually(lambda: _true("> once more" in transcript(app)), what="it on screen")

        # Steering: kill asks first; n keeps the agent, y kills it.
        await pilot.press("k")
        await pilot.press("n")
        await pilot.press("k", "y")
        await eventually(
            lambda: _true(cell(app, agent_id, "state") == "killed"), timeout=30, what="killed"
        )
        # Fork: a new agent from a copy of the ended one's session, in the table.
        await pilot.press("f")
        fork = await eventually(
            lambda: _true(
                next((r for r in app.board.rows.values() if r.name == "maker-fork"), None)
            ),
            timeout=30,
            what="the fork's row",
        )
        await eventually(lambda: _true(cell(app, fork.id, "name") != ""), what="it drawn")
        await eventually(
            lambda: _true(any("forked maker" in n for n in notices(app))), what="a notice"
        )


async def test_a_tree_of_agents_and_a_question_answered_from_the_inbox(
    env: dict[str, str], daemons: list[Daemon]
) -> None:
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    app = DeckApp(FixedLocator(daemon.url, daemon.token))  # as with --url and a token
    async with app.run_test(size=(100, 30)) as pilot, daemon.api() as api:
        created = await api.post(
            "/api/agents",
            json={"prompt": "greet", "agent": "orchestrator", "scenario": "orchestrate"},
        )
        assert created.status_code == 201, created.text
        boss = created.json()["id"]
        await eventually(lambda: _true(len(app.inbox) == 1), timeout=90, what="the question")
        (ask,) = app.inbox
        assert isinstance(ask, Ask) and "exclamation mark" in ask.text
        # The workers sit under the orchestrator in the table.
        rows = {row.name: (row, depth) for row, depth in app.board.ordered()}
        assert rows["tester"][1] == 1 and rows["tester"][0].parent_id == boss
        tester = rows["tester"][0].id
        assert cell(app, tester, "name") == "└ tester"
        await eventually(
            lambda: _true(any("tester asks: Should the greeting" in n for n in notices(app))),
            what="a notice naming the worker",
        )

        await pilot.press("n")
        await pilot.press(*"with it", "enter")
        await eventually(lambda: _answered(api, ask.id), timeout=30, what="the answer to be stored")
        answered = (await api.get(f"/api/asks/{ask.id}")).json()
        assert answered["answer"] == "with it" and answered["answered_by"] == "user:tui:admin"
        await eventually(
            lambda: _true(cell(app, tester, "state") in ("idle", "done")),
            timeout=60,
            what="the tester to go on with the answer",
        )
        await eventually(lambda: _true(not app.inbox), what="the inbox to empty")


async def test_the_stream_resumes_after_the_daemon_restarts(
    env: dict[str, str], daemons: list[Daemon]
) -> None:
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    app = DeckApp(HomeLocator(daemon.home))
    async with app.run_test(size=(100, 30)):
        await eventually(
            lambda: _true(app.feed_state is FeedState.LIVE), timeout=30, what="a live stream"
        )
        assert app.feed is not None and app.feed.connections == 1
        daemon.stop()
        await eventually(
            lambda: _true(app.feed_state is FeedState.RECONNECTING), what="reconnecting"
        )
        assert "reconnecting" in str(app.query_one("#status").render())
        assert app.query_one("#status").has_class("reconnecting")

        # While no daemon runs, an agent runs embedded and writes to the same log.
        done = deck(env, "run", "--scenario", "chat", "--name", "offline", "hello")
        assert done.code == 0, done.err

        restarted = await Daemon(env).start()  # on another port: found through the home
        daemons.append(restarted)
        await eventually(
            lambda: _true(app.feed_state is FeedState.LIVE), timeout=30, what="live again"
        )
        assert app.feed.connections == 2
        offline = await eventually(
            lambda: _true(next((r for r in app.board.rows.values() if r.name == "offline"), None)),
            what="the agent that ran while the TUI was away",
        )
        await eventually(lambda: _true(cell(app, offline.id, "state") == "done"), what="its row")
        # And what happens after the restart streams in live.
        async with restarted.api() as api:
            created = await api.post(
                "/api/agents", json={"prompt": "hi", "name": "after", "scenario": "chat"}
            )
            assert created.status_code == 201, created.text
            agent_id = created.json()["id"]
        await eventually(
            lambda: _true(cell(app, agent_id, "state") == "idle"),
            timeout=60,
            what="the new agent's row, live",
        )


async def _true(value: Any) -> Any:
    return value


async def _answered(api: Any, ask_id: str) -> bool:
    return bool((await api.get(f"/api/asks/{ask_id}")).json()["answer"])


async def _contains(found: Any, text: str) -> bool:
    return any(text in item for item in await found)
