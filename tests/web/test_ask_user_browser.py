"""AskUserQuestion on the dashboard, in a real browser (headless Chromium driven by
Playwright) against a real daemon running the real Claude Code CLI on the
scripted model: the question is one card with its options as buttons, on the
Asks page and on the agent's page; the model's markup shows as text and runs
nothing; a click answers it and the model gets the option picked.

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

LIVE = 60_000  # ms
SCENARIOS = Path(__file__).resolve().parents[1] / "asks" / "scenarios"
HOSTILE_LABEL = "<img src=x onerror=\"window.__pwned='label'\">"


@pytest.fixture
async def page(daemon: RunningDaemon) -> AsyncIterator[Page]:
    async with browser_tab(daemon) as tab:
        yield tab


async def _said(daemon: RunningDaemon, agent_id: str) -> str:
    async def result() -> str | None:
        agent = await daemon.deck.get_agent(agent_id)
        said = agent.extra.get("last_result")
        return str(said) if said else None

    return await eventually(result, timeout=90, what="the model's reply")


async def test_options_are_buttons_and_markup_is_text(daemon: RunningDaemon, page: Page) -> None:
    scenario = str(SCENARIOS / "ask-user-hostile.yaml")
    agent = await daemon.deck.create_agent(AgentSpec(prompt="start", scenario=scenario))
    await page.goto(f"{daemon.url}/asks")
    card = page.locator("#pending-asks .ask-pending")
    await expect(card).to_have_count(1, timeout=LIVE)
    options = card.locator(".choice-option")
    await expect(options).to_have_count(2)
    # The model's markup is text: shown as written, no element made, nothing run.
    await expect(options.first.locator(".choice-label")).to_have_text(HOSTILE_LABEL)
    await expect(card.locator("legend")).to_contain_text('<b id="bold-q">one</b>')
    await expect(card.locator(".choice-header")).to_have_text("<i>Hdr</i>")
    await expect(options.first.locator(".choice-desc")).to_contain_text('<u id="u-desc">')
    assert await page.locator("#bold-q, #u-desc, .ask img").count() == 0
    assert await page.evaluate("window.__pwned") is None
    await expect(card.locator("input[name=q1_other]")).to_be_visible()
    await snap(page, "ask-user-inbox.png")

    # The agent's page shows the same card, with the same buttons.
    await page.goto(f"{daemon.url}/agents/{agent.id}")
    mine = page.locator("#agent-asks .ask-pending")
    await expect(mine).to_have_count(1, timeout=LIVE)
    await expect(mine.locator(".choice-option")).to_have_count(2)
    assert await page.evaluate("window.__pwned") is None
    await snap(page, "ask-user-agent-page.png")

    # Answering with nothing picked is refused; picking the hostile option answers.
    await page.goto(f"{daemon.url}/asks")
    card = page.locator("#pending-asks .ask-pending")
    await card.get_by_role("button", name="Answer").click()
    await expect(card.locator(".flash-error")).to_contain_text("no answer", timeout=LIVE)
    await expect(card).to_have_count(1)
    await snap(page, "ask-user-refused.png")
    await card.locator(".choice-option").first.click()
    await card.get_by_role("button", name="Answer").click()
    answered = page.locator("#answered-asks .ask-answered")
    await expect(answered).to_have_count(1, timeout=LIVE)
    await expect(answered.first.locator(".ask-answer-text")).to_contain_text(HOSTILE_LABEL)
    assert await page.evaluate("window.__pwned") is None
    await snap(page, "ask-user-answered.png")
    assert await _said(daemon, agent.id) == "HOSTILE-CHOSEN"


async def test_other_words_and_several_options(daemon: RunningDaemon, page: Page) -> None:
    scenario = str(SCENARIOS / "ask-user-two.yaml")
    agent = await daemon.deck.create_agent(AgentSpec(prompt="start", scenario=scenario))
    await page.goto(f"{daemon.url}/asks")
    card = page.locator("#pending-asks .ask-pending")
    await expect(card).to_have_count(1, timeout=LIVE)
    first, second = card.locator("fieldset.choice").nth(0), card.locator("fieldset.choice").nth(1)
    await expect(second.locator("input[type=checkbox]")).to_have_count(3)
    await first.locator(".choice-option", has_text="SQLite").click()
    await second.locator(".choice-option", has_text="Auth").click()
    await second.locator(".choice-option", has_text="Search").click()
    # Other words win over the option picked for that question.
    await first.locator("input[name=q1_other]").fill("keep it in memory")
    await snap(page, "ask-user-two-picked.png")
    await card.get_by_role("button", name="Answer").click()
    answered = page.locator("#answered-asks .ask-answered")
    await expect(answered).to_have_count(1, timeout=LIVE)
    await expect(answered.first).to_contain_text("1=keep it in memory")
    await expect(answered.first).to_contain_text("2=Auth, Search")
    assert await _said(daemon, agent.id) == "CHOSE-OTHER-WORDS"
