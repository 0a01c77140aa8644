"""The dashboard in a real browser: headless Chromium driven by Playwright,
against a real daemon running real Claude Code agents on the scripted model.

Screenshots land in ``artifacts/screenshots/``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Page, expect

from agentdeck.core.agent import AgentSpec

from .conftest import RunningDaemon
from .dashboard_support import CHROMIUM, browser_tab, snap

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.browser,
    pytest.mark.cli,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed"),
]

LIVE = 60_000  # ms: a real CLI run against the scripted model, on a busy 2-core box


@pytest.fixture
async def page(daemon: RunningDaemon) -> AsyncIterator[Page]:
    """A browser tab logged in through the login URL, on the board."""
    async with browser_tab(daemon) as tab:
        await expect(tab.get_by_text("Start an agent")).to_be_visible()
        yield tab


async def test_a_running_agent_appears_live_and_its_transcript_streams(
    daemon: RunningDaemon, page: Page
) -> None:
    # The board is already open: the agent must appear without a reload.
    agent = await daemon.deck.create_agent(
        AgentSpec(
            prompt="Tell me a long story, slowly.", name="storyteller", scenario="slow-stream"
        )
    )
    row = page.locator(f"#agent-{agent.id}")
    await expect(row).to_be_visible(timeout=LIVE)
    await expect(row.locator(".badge")).to_have_text(re.compile("running|idle"), timeout=LIVE)
    await expect(page.locator("#activity")).to_contain_text("storyteller", timeout=LIVE)
    await snap(page, "board-live.png")

    await row.get_by_role("link", name="storyteller").click()
    await expect(page).to_have_url(f"{daemon.url}/agents/{agent.id}")
    transcript = page.locator("#transcript")
    await expect(transcript).to_contain_text("sentence number 20", timeout=LIVE)
    await expect(page.locator("#agent-state")).to_have_text("idle", timeout=LIVE)
    await expect(transcript).to_contain_text("turn done: ok")
    await snap(page, "agent-transcript.png")

    await page.get_by_role("link", name="Activity", exact=True).click()
    await expect(page.locator("#activity")).to_contain_text("turn done")
    await snap(page, "activity.png")


async def test_start_from_the_form_and_send_a_follow_up(daemon: RunningDaemon, page: Page) -> None:
    form = page.locator("form[hx-post='/ui/agents']")
    await form.locator("textarea[name=prompt]").fill("Say hello.")
    await form.locator("input[name=name]").fill("chatty")
    await form.locator("select[name=scenario]").select_option("chat")
    await snap(page, "board-start-form.png")
    await form.get_by_role("button", name="Start").click()

    await expect(page).to_have_url(re.compile(r"/agents/[a-z0-9]+$"), timeout=LIVE)
    transcript = page.locator("#transcript")
    await expect(transcript).to_contain_text("Hello! I am the scripted model", timeout=LIVE)
    await expect(page.locator("#agent-state")).to_have_text("idle", timeout=LIVE)

    await page.locator("#followup-text").fill("Please say hello again.")
    await page.get_by_role("button", name="Send").click()
    await expect(transcript.locator(".user").last).to_contain_text("Please say hello again.")
    await expect(transcript).to_contain_text("Hello again! This is my answer", timeout=LIVE)
    await expect(page.locator("#followup-text")).to_have_value("")
    await snap(page, "agent-follow-up.png")

    agents = await daemon.deck.list_agents()
    assert [a.name for a in agents] == ["chatty"]
    assert agents[0].spec.scenario == "chat"


async def test_kill_a_busy_agent_from_its_page(daemon: RunningDaemon, page: Page) -> None:
    agent = await daemon.deck.create_agent(
        AgentSpec(
            prompt="Run the long job.",
            name="sleeper",
            scenario="long-tool",
            allow=("Bash(python3:*)",),
        )
    )
    await page.goto(f"{daemon.url}/agents/{agent.id}")
    tool = page.locator("details.tool").filter(has_text="Sleep for a minute")
    await expect(tool).to_be_visible(timeout=LIVE)
    await expect(page.locator(".tool-now")).to_contain_text("Bash", timeout=LIVE)
    await tool.locator("summary").click()
    await expect(tool.locator(".tool-output.pending")).to_contain_text("running")
    await snap(page, "agent-busy.png")

    page.once("dialog", lambda dialog: dialog.accept())
    await page.get_by_role("button", name="Kill").click()
    await expect(page.locator("#agent-state")).to_have_text("killed", timeout=LIVE)
    await expect(page.locator(".flash-ok")).to_have_text("killed")
    await expect(page.get_by_role("button", name="Kill")).to_be_disabled()
    await expect(page.locator("#transcript")).to_contain_text("killed", timeout=LIVE)
    await snap(page, "agent-killed.png")

    await page.goto(daemon.url + "/")
    await expect(page.locator(f"#agent-{agent.id} .badge")).to_have_text("killed")
    assert (await daemon.deck.get_agent(agent.id)).state == "killed"
