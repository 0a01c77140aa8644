"""The agent tree and the Asks inbox in a real browser (headless Chromium driven
by Playwright), against a real daemon running an orchestrator and its workers on
the real Claude Code CLI and the scripted model.

Screenshots land in ``artifacts/screenshots/``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from agentdeck.core.agent import AgentSpec
from agentdeck.core.asks import Ask, AskState
from tests.support.waiting import eventually

from .conftest import RunningDaemon
from .dashboard_support import CHROMIUM, browser_tab, snap

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.browser,
    pytest.mark.cli,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed"),
]

LIVE = 60_000  # ms
TEAM = str(Path(__file__).resolve().parents[1] / "orchestration" / "scenarios" / "team.yaml")


@pytest.fixture
async def page(daemon: RunningDaemon) -> AsyncIterator[Page]:
    """A browser tab logged in through the login URL, on the board."""
    async with browser_tab(daemon) as tab:
        yield tab


async def test_the_tree_and_the_asks_inbox_live(daemon: RunningDaemon, page: Page) -> None:
    deck = daemon.deck
    # The board is open: the orchestrator and then its workers appear without a reload.
    lead = await deck.create_agent(
        AgentSpec(prompt="build it", name="boss", scenario=TEAM), template="orchestrator"
    )
    boss = page.locator(f"#agent-{lead.id}")
    await expect(boss).to_be_visible(timeout=LIVE)
    children = page.locator(f"#children-{lead.id} .agent-row")
    await expect(children).to_have_count(2, timeout=LIVE)
    await expect(children.first).to_contain_text("wa")
    await expect(children.nth(1)).to_contain_text("wb")
    await expect(boss.locator(".kids").last).to_have_text("· 2 agents", timeout=LIVE)
    await expect(page.locator("#asks-count")).to_have_text("2", timeout=LIVE)
    await expect(boss.locator(".badge")).to_have_text("awaiting agents", timeout=LIVE)
    await snap(page, "board-tree.png")

    # Folding the tree hides the workers; unfolding shows them again.
    toggle = boss.locator(".tree-toggle")
    await toggle.click()
    await expect(page.locator(f"#children-{lead.id}")).to_be_hidden()
    await toggle.click()
    await expect(children.first).to_be_visible()

    await page.get_by_role("link", name=re.compile("^Asks")).click()
    await expect(page).to_have_url(f"{daemon.url}/asks")
    pending = page.locator("#pending-asks .ask-pending")
    await expect(pending).to_have_count(2)
    await expect(page.locator("#pending-asks")).to_contain_text("QUESTION-A: which grammar?")
    await expect(page.locator("#pending-asks")).to_contain_text("asks its orchestrator boss")
    await snap(page, "asks-inbox.png")

    card = pending.filter(has_text="QUESTION-A")
    await card.locator("textarea[name=answer]").fill("ANSWER-FROM-BROWSER: use PEG")
    await card.get_by_role("button", name="Answer").click()
    answered = page.locator("#answered-asks .ask-answered")
    await expect(answered).to_have_count(1, timeout=LIVE)
    await expect(answered.first).to_contain_text("ANSWER-FROM-BROWSER: use PEG")
    await expect(answered.first).to_contain_text("user:web")

    # The other one is answered elsewhere (the API): the card turns over live.
    other: list[Ask] = await deck.asks(states=[AskState.PENDING])
    assert [a.text for a in other] == ["QUESTION-B: which format?"]
    await deck.answer_ask(other[0].id, "ANSWER-FROM-API: JSON", by="user:api")
    await expect(answered).to_have_count(2, timeout=LIVE)
    await expect(page.locator("#pending-asks .ask-pending")).to_have_count(0)
    await expect(page.locator(".asks-empty")).to_be_visible()
    await expect(page.locator("#asks-count")).to_have_text("")
    await snap(page, "asks-answered.png")

    async def reported() -> bool:
        agent = await deck.get_agent(lead.id)
        return agent.extra.get("last_result") == "TEAM-REPORT: both workers finished."

    await eventually(reported, timeout=90, what="the orchestrator's report")

    # The orchestrator's transcript reads as what it did; its workers are listed.
    await page.goto(f"{daemon.url}/agents/{lead.id}")
    transcript = page.locator("#transcript")
    await expect(transcript).to_contain_text("spawns wa (engineer, new workspace): TASK-A")
    await expect(transcript).to_contain_text("waits for wa, wb (all, up to 600s)")
    await expect(transcript).to_contain_text("TEAM-REPORT: both workers finished.")
    family = page.locator("#agent-family")
    await expect(family).to_contain_text("Agents it started")
    await expect(family.get_by_role("link", name="wa")).to_be_visible()
    await snap(page, "orchestrator-transcript.png")

    # A worker's page links to its parent and shows its question and answer.
    await family.get_by_role("link", name="wa").click()
    await expect(page.locator("#agent-family")).to_contain_text("Started by boss")
    await expect(page.locator("#transcript")).to_contain_text("asks its orchestrator")
    await expect(page.locator("#transcript")).to_contain_text("ANSWER-FROM-BROWSER: use PEG")
    await snap(page, "worker-transcript.png")
    await page.locator("#agent-family").get_by_role("link", name="boss").click()
    await expect(page).to_have_url(f"{daemon.url}/agents/{lead.id}")
