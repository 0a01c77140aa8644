"""The Memories inbox on the dashboard, in a real browser (headless Chromium driven
by Playwright) against a real daemon running the real Claude Code CLI on the
scripted model: an agent's hostile ``remember`` text shows as text and runs
nothing; Accept moves it to the accepted tab; an edit rewords it; Withdraw.

Screenshots land in ``artifacts/screenshots/``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from agentdeck.core.agent import AgentSpec
from tests.support.waiting import eventually

from .conftest import RunningDaemon
from .dashboard_support import CHROMIUM, browser_tab, snap

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.browser,
    pytest.mark.cli,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed"),
]

SCENARIO = str(Path(__file__).resolve().parents[1] / "memory" / "scenarios" / "remember.yaml")
HOSTILE = "<img src=x onerror=\"window.__pwned='memory'\"><script>window.__pwned='script'</script>"


@pytest.fixture
async def page(daemon: RunningDaemon) -> AsyncIterator[Page]:
    async with browser_tab(daemon) as tab:
        yield tab


async def test_a_hostile_memory_is_text_and_accept_edit_withdraw_work(
    daemon: RunningDaemon, page: Page
) -> None:
    agent = await daemon.deck.create_agent(AgentSpec(prompt="HOSTILE-TASK", scenario=SCENARIO))

    async def proposed() -> str | None:
        found = [m for m in await daemon.deck.memory_proposals() if m.agent_id == agent.id]
        return found[0].id if found else None

    memory_id = await eventually(proposed, timeout=90, what="the agent's proposal")
    await page.goto(f"{daemon.url}/memories")
    card = page.locator(f".memory-card[data-memory-id='{memory_id}']")
    await expect(card).to_have_count(1)
    await expect(card.locator("pre.memory-text")).to_contain_text(HOSTILE)
    await expect(card.locator("pre.memory-text")).to_contain_text("{{ 7*7 }}")
    await expect(card).to_contain_text(agent.id)
    assert await page.locator(".memories-page img, .memories-page script").count() == 0
    assert await page.evaluate("window.__pwned") is None
    await snap(page, "memories-inbox.png")

    await card.get_by_role("button", name="Accept").click()
    await expect(page.locator(".memory-done")).to_have_text("Memory accepted.")
    await expect(page.locator(f".memory-card[data-memory-id='{memory_id}']")).to_have_count(0)
    decided = await daemon.deck.memory_proposal(memory_id)
    assert (decided.decided_by or "").startswith("user:web")

    await page.goto(f"{daemon.url}/memories?state=accepted")
    card = page.locator(f".memory-card[data-memory-id='{memory_id}']")
    await card.locator("summary").click()
    await card.locator("textarea[name=text]").fill("Run the tests with -p no:cacheprovider.")
    await card.locator("select[name=kind]").select_option("command")
    await card.get_by_role("button", name="Save").click()
    await expect(page.locator(".memory-done")).to_have_text("Memory edited.")
    card = page.locator(f".memory-card[data-memory-id='{memory_id}']")
    await expect(card.locator("pre.memory-text")).to_have_text(
        "Run the tests with -p no:cacheprovider."
    )
    await expect(card).to_contain_text("(edited)")
    await snap(page, "memories-accepted.png")
    edited = await daemon.deck.memory_proposal(memory_id)
    assert (edited.kind, edited.edited) == ("command", True)

    await card.get_by_role("button", name="Withdraw").click()
    await expect(page.locator(".memory-done")).to_have_text("Memory rejected.")
    assert str((await daemon.deck.memory_proposal(memory_id)).state) == "rejected"
    assert await page.evaluate("window.__pwned") is None
