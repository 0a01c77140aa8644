"""The dashboard's pages and streams over real HTTP, logged in with the cookie."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState
from agentdeck.core.events import (
    AgentSpawned,
    AssistantText,
    ErrorOccurred,
    Event,
    SandboxBlocked,
    StateChanged,
    ToolCalled,
    ToolReturned,
    UserMessageSent,
)
from agentdeck.store.store import Store

from .conftest import RunningDaemon
from .dashboard_support import items_in, logged_in, rows_in

pytestmark = pytest.mark.anyio

POLL_INTERVAL = 0.01  # polling under a deadline


def make_agent(agent_id: str, state: AgentState = AgentState.RUNNING, **changes: Any) -> Agent:
    now = time.time()
    return Agent(
        id=agent_id,
        name=changes.pop("name", f"agent-{agent_id}"),
        state=state,
        spec=AgentSpec(prompt=f"do the work of {agent_id}", allow=("Bash(pytest *)",)),
        cwd="/tmp/work",
        created_at=changes.pop("created_at", now),
        updated_at=now,
        **changes,
    )


async def seed(store: Store, agent: Agent, events: list[Event] | None = None) -> None:
    spawned = AgentSpawned(
        agent_id=agent.id, ts=time.time(), name=agent.name, cwd=agent.cwd, spec=agent.spec.to_dict()
    )
    await store.record([spawned, *(events or [])], agent)


def text(agent_id: str, body: str) -> AssistantText:
    return AssistantText(agent_id=agent_id, ts=time.time(), text=body)


async def read_sse_until(
    client: httpx.AsyncClient, url: str, needle: str, *, timeout: float = 15.0
) -> str:
    """Read an SSE stream until ``needle`` shows up in it (or fail at the deadline)."""
    seen = ""
    async with client.stream("GET", url, timeout=timeout) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        async with asyncio.timeout(timeout):
            async for chunk in response.aiter_text():
                seen += chunk
                if needle in seen:
                    return seen
    raise AssertionError(f"{needle!r} not in the stream: {seen[-2000:]}")


async def subscribed(daemon: RunningDaemon, timeout: float = 10.0) -> None:
    """Wait until a stream has subscribed to the hub (so what follows is live)."""
    async with asyncio.timeout(timeout):
        while daemon.deck._hub.subscriber_count == 0:  # noqa: ASYNC110 - no event to await
            await asyncio.sleep(POLL_INTERVAL)


async def test_pages_need_the_login_cookie(daemon: RunningDaemon) -> None:
    async with httpx.AsyncClient(base_url=daemon.url) as anonymous:
        response = await anonymous.get("/")
        assert response.status_code == 401
        assert "login URL" in response.text
        wrong = await anonymous.get("/login?token=nope")
        assert wrong.status_code == 401
    async with logged_in(daemon) as web:
        response = await web.get("/")
        assert response.status_code == 200
        assert "Start an agent" in response.text
        assert "No agents yet" in response.text


async def test_assets_are_vendored_and_served(daemon: RunningDaemon) -> None:
    async with logged_in(daemon) as web:
        page = (await web.get("/")).text
        for name in ("htmx.min.js", "htmx-ext-sse.min.js", "dashboard.js", "dashboard.css"):
            assert f"/static/{name}" in page
            asset = await web.get(f"/static/{name}")
            assert asset.status_code == 200, name
            assert len(asset.content) > 500
        assert (await web.get("/static/VENDORED.md")).status_code == 404
        assert (await web.get("/static/..%2Fdashboard.py")).status_code == 404
        # No CDN, no external fonts: every src/href stays on this server.
        assert "https://" not in page
        assert "http://" not in page


async def test_board_rows_states_totals_and_filters(daemon: RunningDaemon) -> None:
    store = daemon.deck._store
    await seed(store, make_agent("run1", current_tool="Bash", turns=3, cost_usd=0.125))
    await seed(store, make_agent("err1", AgentState.ERROR, last_error="boom"))
    await seed(store, make_agent("idle1", AgentState.IDLE, input_tokens=1000, output_tokens=234))
    async with logged_in(daemon) as web:
        page = (await web.get("/")).text
        assert sorted(rows_in(page)) == ["err1", "idle1", "run1"]
        assert 'class="badge state-running"' in page
        assert 'class="badge state-error"' in page
        assert "$0.1250" in page  # cost of run1 and the total
        assert "1,234" in page  # tokens
        assert ">Bash<" in page
        running = (await web.get("/", params={"state": "running"})).text
        assert rows_in(running) == ["run1"]
        finished = (await web.get("/", params={"state": "finished"})).text
        assert rows_in(finished) == ["err1"]
        assert rows_in((await web.get("/", params={"state": "bogus"})).text) == []
        assert rows_in((await web.get("/", params={"q": "idle1"})).text) == ["idle1"]


async def test_board_pages(daemon: RunningDaemon) -> None:
    store = daemon.deck._store
    for i in range(7):
        await seed(store, make_agent(f"p{i:02d}", created_at=1000.0 + i))
    async with logged_in(daemon) as web:
        first = (await web.get("/", params={"per_page": 3})).text
        assert rows_in(first) == ["p06", "p05", "p04"]
        assert "page 1 of 3" in first
        assert 'rel="next" href="/?page=2&amp;per_page=3"' in first
        last = (await web.get("/", params={"per_page": 3, "page": 3})).text
        assert rows_in(last) == ["p00"]
        assert 'rel="next"' not in last
        assert (await web.get("/", params={"per_page": 10_000})).status_code == 422


async def test_agent_page_transcript(daemon: RunningDaemon) -> None:
    store = daemon.deck._store
    a = "tr1"
    events: list[Event] = [
        StateChanged(agent_id=a, ts=time.time(), old="starting", new="running"),
        UserMessageSent(agent_id=a, ts=time.time(), text="please <b>fix</b> it"),
        text(a, "I will **fix** it.\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))"),
        ToolCalled(
            agent_id=a,
            ts=time.time(),
            tool_use_id="t1",
            tool="Bash",
            input={"command": "pytest -q"},
        ),
        ToolReturned(agent_id=a, ts=time.time(), tool_use_id="t1", output="1 failed", size=8),
        ToolCalled(agent_id=a, ts=time.time(), tool_use_id="t2", tool="Read", input={"x": 1}),
        ToolReturned(
            agent_id=a,
            ts=time.time(),
            tool_use_id="t2",
            output="y" * 5000,
            size=5_000_000,
            truncated=True,
            payload_path="/home/payloads/tr1/t2.txt",
            is_error=True,
        ),
        ErrorOccurred(agent_id=a, ts=time.time(), message="the model endpoint failed"),
    ]
    await seed(store, make_agent(a), events)
    async with logged_in(daemon) as web:
        response = await web.get(f"/agents/{a}")
        assert response.status_code == 200
        page = response.text
    assert "<strong>fix</strong>" in page
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'href="javascript:' not in page
    assert "please &lt;b&gt;fix&lt;/b&gt; it" in page
    assert '<details class="tool">' in page
    assert "Bash(pytest -q)" in page
    assert "1 failed" in page
    assert "4.8 MiB" in page and "the full output (4.8 MiB) is stored" in page
    assert "/home/payloads/tr1/t2.txt" in page
    assert "show all 5,000 characters" in page
    assert 'class="error-box"' in page and "the model endpoint failed" in page
    assert 'class="badge state-running"' in page
    assert f'sse-connect="/ui/agents/{a}/stream?after=' in page
    assert len(items_in(page)) == 7  # the two results are folded into their calls


async def test_full_output_link_and_missing_agent(daemon: RunningDaemon) -> None:
    stored = await daemon.deck._store.append(
        [ToolReturned(agent_id="x", ts=time.time(), tool_use_id="t", output="z" * 9000, size=9000)]
    )
    async with logged_in(daemon) as web:
        full = await web.get(f"/ui/events/{stored[0].id}/output")
        assert full.status_code == 200 and full.text == "z" * 9000
        assert (await web.get("/ui/events/99999/output")).status_code == 404
        missing = await web.get("/agents/nope")
        assert missing.status_code == 404 and "There is no agent nope" in missing.text


async def test_long_log_is_paged_backwards(daemon: RunningDaemon) -> None:
    store = daemon.deck._store
    await seed(store, make_agent("long"), [text("long", f"line {i}") for i in range(449)])
    async with logged_in(daemon) as web:
        page = (await web.get("/agents/long")).text
        ids = items_in(page)
        assert len(ids) == 200
        assert "line 448" in page and "line 248" not in page
        assert f"/ui/agents/long/older?before={ids[0]}" in page
        older = (await web.get("/ui/agents/long/older", params={"before": ids[0]})).text
        older_ids = items_in(older)
        assert len(older_ids) == 200 and older_ids[-1] < ids[0]
        oldest = (await web.get("/ui/agents/long/older", params={"before": older_ids[0]})).text
        assert len(items_in(oldest)) == 50  # the spawn event and lines 0..48
        assert "Load older events" not in oldest
        # Without JavaScript the link opens the earlier page itself.
        plain = (await web.get("/agents/long", params={"before": ids[0]})).text
        assert items_in(plain) == older_ids
        assert "sse-connect" not in plain


async def test_agent_stream_sends_transcript_fragments(daemon: RunningDaemon) -> None:
    store = daemon.deck._store
    await seed(store, make_agent("s1"))
    after = await store.last_event_id()
    async with logged_in(daemon) as web:
        url = f"/ui/agents/s1/stream?after={after}"

        async def later() -> None:
            await subscribed(daemon)
            await store.append([text("s1", "streamed *live*"), text("other", "not for s1")])

        task = asyncio.create_task(later())
        seen = await read_sse_until(web, url, "<em>live</em>")
        await task
    assert "event: update" in seen
    assert 'hx-swap-oob="beforeend:#transcript"' in seen
    assert "not for s1" not in seen


async def test_board_stream_inserts_new_agents_and_updates_rows(daemon: RunningDaemon) -> None:
    store = daemon.deck._store
    await seed(store, make_agent("b1"))
    after = await store.last_event_id()
    async with logged_in(daemon) as web:

        async def later() -> None:
            await subscribed(daemon)
            await seed(store, make_agent("b2", name="newcomer"))
            changed = make_agent("b1", AgentState.IDLE)
            await store.record(
                [StateChanged(agent_id="b1", ts=time.time(), old="running", new="idle")], changed
            )

        task = asyncio.create_task(later())
        seen = await read_sse_until(web, f"/ui/stream?after={after}", 'data-state="idle"')
        await task
    assert 'hx-swap-oob="afterbegin:#agent-rows"' in seen and "newcomer" in seen
    assert 'id="agent-b1" data-agent-id="b1" data-state="idle" hx-swap-oob="true"' in seen
    assert 'id="totals" hx-swap-oob="true"' in seen
    assert 'hx-swap-oob="afterbegin:#activity"' in seen


async def test_start_form_validation(daemon: RunningDaemon) -> None:
    async with logged_in(daemon) as web:
        origin = {"origin": daemon.url}
        empty = await web.post("/ui/agents", data={"prompt": " "}, headers=origin)
        assert empty.status_code == 400 and "write a prompt" in empty.text
        bad = await web.post(
            "/ui/agents", data={"prompt": "hi", "scenario": "nope"}, headers=origin
        )
        assert bad.status_code == 400 and "unknown scenario" in bad.text
        htmx = await web.post(
            "/ui/agents", data={"prompt": ""}, headers={**origin, "hx-request": "true"}
        )
        assert htmx.status_code == 200 and 'class="flash flash-error"' in htmx.text
        foreign = await web.post(
            "/ui/agents", data={"prompt": "hi"}, headers={"origin": "http://evil.example"}
        )
        assert foreign.status_code == 403
        unknown = await web.post("/ui/agents/zzzz/kill", headers={**origin, "hx-request": "true"})
        assert unknown.status_code == 200 and "zzzz" in unknown.text
    assert await daemon.deck.list_agents() == []


async def test_the_start_form_starts_an_agent_in_a_worktree(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    from ..worktrees.conftest import make_repo

    repo = make_repo(tmp_path / "repo")
    plain = tmp_path / "plain"
    plain.mkdir()
    async with logged_in(daemon) as web:
        origin = {"origin": daemon.url}
        form = (await web.get("/")).text
        assert 'name="workspace"' in form and 'value="worktree"' in form
        started = await web.post(
            "/ui/agents",
            data={"prompt": "hi", "scenario": "chat", "cwd": str(repo), "workspace": "worktree"},
            headers=origin,
        )
        assert started.status_code == 303, started.text
        agent_id = started.headers["location"].rsplit("/", 1)[-1]
        agent = await daemon.deck.get_agent(agent_id)
        assert agent.extra["worktree"]["repo"] == str(repo)
        assert agent.extra["worktree"]["branch"].startswith("agentdeck/")
        no_repo = await web.post(
            "/ui/agents",
            data={"prompt": "hi", "scenario": "chat", "cwd": str(plain), "workspace": "worktree"},
            headers=origin,
        )
        assert no_repo.status_code == 400 and "not in a git repository" in no_repo.text
        no_cwd = await web.post(
            "/ui/agents", data={"prompt": "hi", "workspace": "worktree"}, headers=origin
        )
        assert no_cwd.status_code == 400 and "give its working directory" in no_cwd.text
    await daemon.deck.kill(agent_id)


async def test_a_hand_started_session_is_marked_external_and_offers_no_steering(
    daemon: RunningDaemon,
) -> None:
    await seed(daemon.deck._store, make_agent("ext1", source=AgentSource.EXTERNAL))
    await seed(daemon.deck._store, make_agent("own1"))
    async with logged_in(daemon) as web:
        board = (await web.get("/")).text
        external = (await web.get("/agents/ext1")).text
        own = (await web.get("/agents/own1")).text
    assert set(rows_in(board)) >= {"ext1", "own1"}
    row = board[board.index('id="agent-ext1"') :].split('class="row agent-row', 1)[0]
    assert "source-external" in row
    assert "source-external" in external and "steer it in its own terminal" in external
    for steering in ("/interrupt", "/kill", "/resume", "/send"):
        assert f"/ui/agents/ext1{steering}" not in external
        assert f"/ui/agents/own1{steering}" in own


async def test_the_sandbox_shows_on_the_board_the_agent_page_and_the_feed(
    daemon: RunningDaemon,
) -> None:
    store = daemon.deck._store
    a = "sb1"
    blocked = [
        SandboxBlocked(
            agent_id=a,
            ts=time.time(),
            what="network",
            target="evil.example:443",
            detail="not in the profile's network.allowed_domains",
        ),
        SandboxBlocked(agent_id=a, ts=time.time(), what="write", target="/etc/<x>"),
    ]
    await seed(store, make_agent(a, extra={"sandbox": "process"}), blocked)
    await seed(store, make_agent("sb2", extra={"sandbox": "unavailable"}))
    async with logged_in(daemon) as web:
        board = (await web.get("/")).text
        page = (await web.get(f"/agents/{a}")).text
        feed = (await web.get("/activity")).text
    assert 'class="sandbox-tag sandbox-process"' in board
    assert 'class="sandbox-tag sandbox-unavailable"' in board
    assert "sandbox: process" in page
    assert "sandbox blocked a network: <code>evil.example:443</code>" in page
    assert "not in the profile&#39;s network.allowed_domains" in page
    assert "sandbox blocked a write: <code>/etc/&lt;x&gt;</code>" in page
    assert "sandbox blocked a network: evil.example:443" in feed
