"""The runner host on the board and on the agent page, in a real browser (headless
Chromium driven by Playwright) against a real daemon: a host tag on the row of an
agent a host runs (none on the others), its host and lease on its page, a
``queued`` agent's badge, counter and filter; a host name is shown as text, never
as markup.

Screenshots land in ``artifacts/screenshots/``.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.store.store import Store
from tests.conftest import make_settings

from .conftest import RunningDaemon, running_daemon
from .dashboard_support import CHROMIUM, browser_tab, snap

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.browser,
    pytest.mark.cli,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed"),
]

LIVE = 60_000  # ms
HOSTILE = '<img src=x onerror="window.pwned=1">'


@pytest.fixture
async def page(daemon: RunningDaemon) -> AsyncIterator[Page]:
    async with browser_tab(daemon) as tab:
        yield tab


async def seed(
    store: Store, name: str, state: AgentState, extra: dict[str, Any], *, ago: float = 0.0
) -> Agent:
    now = time.time() - ago
    agent = Agent(
        id=f"agent000{name:0>8}", name=name, state=state, spec=AgentSpec(prompt="p"),
        cwd="/tmp/w", created_at=now, updated_at=now, extra=extra,
    )  # fmt: skip
    await store.save_agent(agent)
    return agent


async def test_the_board_and_the_agent_page_show_the_runner_host(
    daemon: RunningDaemon, page: Page
) -> None:
    store = daemon.deck._store
    hosted = await seed(store, "onhost", AgentState.DONE, {"host": "builder-2", "lease": 7})
    local = await seed(store, "local", AgentState.DONE, {})
    queued = await seed(store, "waiting", AgentState.QUEUED, {}, ago=120)
    await page.goto(daemon.url + "/")

    row = page.locator(f"#agent-{hosted.id}")
    await expect(row.locator(".host-tag")).to_have_text("host: builder-2")
    await expect(page.locator(f"#agent-{local.id} .host-tag")).to_have_count(0)
    await expect(page.locator(f"#agent-{queued.id} .badge")).to_have_text("queued")
    await expect(page.locator("#totals a.state-queued .stat-value")).to_have_text("1")
    # Its wait counts, and goes on counting.
    await expect(page.locator(f"#agent-{queued.id} .c-elapsed")).to_have_text(
        re.compile(r"^2m \d\ds$")
    )
    await expect(page.locator(f"#agent-{queued.id} .c-elapsed")).to_have_attribute(
        "data-since", str(queued.created_at)
    )
    await snap(page, "board-hosts.png")

    await page.goto(daemon.url + "/?state=queued")
    await expect(page.locator(".agent-row")).to_have_count(1)
    await expect(page.locator(f"#agent-{queued.id}")).to_be_visible()
    await page.goto(daemon.url + "/?state=live")
    await expect(page.locator(f"#agent-{queued.id}")).to_be_visible()  # queued is live

    await page.goto(f"{daemon.url}/agents/{hosted.id}")
    await expect(page.locator("#agent-host")).to_have_text("builder-2 lease 7")
    await snap(page, "agent-host.png")
    await page.goto(f"{daemon.url}/agents/{local.id}")
    await expect(page.locator("#agent-header")).to_be_visible()
    await expect(page.locator("#agent-host")).to_have_count(0)
    await expect(page.get_by_role("button", name="Kill")).to_be_disabled()  # it ended

    # A queued agent can be killed before any host takes it.
    await page.goto(f"{daemon.url}/agents/{queued.id}")
    page.once("dialog", lambda dialog: dialog.accept())
    kill = page.get_by_role("button", name="Kill")
    await expect(kill).to_be_enabled()
    await kill.click()
    await expect(page.locator("#agent-state")).to_have_text("killed", timeout=30_000)


async def test_a_host_name_is_shown_as_text_never_as_markup(
    daemon: RunningDaemon, page: Page
) -> None:
    # Host names are checked plain words where a host registers; a row written
    # otherwise (an older version, a hand-edited database) is still only text.
    agent = await seed(daemon.deck._store, "odd", AgentState.DONE, {"host": HOSTILE, "lease": 1})
    await page.goto(daemon.url + "/")
    await expect(page.locator(f"#agent-{agent.id} .host-tag")).to_have_text(f"host: {HOSTILE}")
    await page.goto(f"{daemon.url}/agents/{agent.id}")
    await expect(page.locator("#agent-host")).to_have_text(f"{HOSTILE} lease 1")
    assert await page.evaluate("window.pwned") is None
    assert await page.locator("img[src=x]").count() == 0


async def test_the_board_shows_live_the_host_that_claims_a_queued_agent(
    tmp_path: Path, pg_url: str
) -> None:
    """A deck on PostgreSQL with runner hosts: a new agent's row shows ``queued``,
    then, without a reload, the host that claimed it, and the agent at work."""
    from agentdeck.runner import steering

    settings = make_settings(tmp_path, database_url=pg_url, runner_poll_seconds=0.2)
    try:
        async with running_daemon(settings) as daemon, browser_tab(daemon) as page:
            deck = daemon.deck
            agent = await deck.create_agent(
                AgentSpec(prompt="hello", name="later", scenario="chat")
            )
            row = page.locator(f"#agent-{agent.id}")
            await expect(row.locator(".badge")).to_have_text("queued", timeout=LIVE)
            await expect(row.locator(".host-tag")).to_have_count(0)
            await deck.serve_as_host(deck.host_of_settings(name="h1", capacity=2))
            await expect(row.locator(".host-tag")).to_have_text("host: h1", timeout=LIVE)
            await expect(row.locator(".badge")).to_have_text("idle", timeout=LIVE)
            await snap(page, "board-host-claimed.png")
    finally:
        steering.set_this_host(None)
