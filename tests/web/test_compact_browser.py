"""The agent page's Compact button (headless Chromium, a real daemon, the real CLI
on the scripted model): disabled while the agent runs its turn, enabled once it
is idle; with instructions typed, it sends Claude Code's ``/compact`` with them and
the log records the compaction; instructions with control characters are refused
with the page saying why, nothing sent. Screenshots in ``artifacts/screenshots/``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from playwright.async_api import Page, expect

from agentdeck.core.agent import AgentSpec
from agentdeck.core.compaction import BOUNDARY, compaction
from agentdeck.core.events import StoredEvent
from tests.support.waiting import eventually

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
    async with browser_tab(daemon) as tab:
        yield tab


async def test_the_compact_button_compacts_an_idle_agent(
    daemon: RunningDaemon, page: Page, tmp_path: Path
) -> None:
    scenario = tmp_path / "slow.yaml"
    turns = [{"delay": 3.0, "reply": [{"text": "HELLO-SLOWLY"}]}, {"reply": [{"text": "MORE"}]}]
    scenario.write_text(yaml.safe_dump({"name": "slow", "turns": turns}))
    agent = await daemon.deck.create_agent(
        AgentSpec(prompt="hello", name="compactee", scenario=str(scenario))
    )
    await page.goto(f"{daemon.url}/agents/{agent.id}")
    button = page.locator("#compact-button")
    instructions = page.locator(".compact-form input[name=text]")
    await expect(page.locator("#agent-state")).not_to_have_text("idle")
    await expect(button).to_be_disabled()
    await expect(page.locator("#agent-state")).to_have_text("idle", timeout=LIVE)
    await expect(button).to_be_enabled()
    mark = await daemon.deck.last_event_id()

    # Hostile instructions (an escape sequence; a text field drops line breaks itself):
    # refused, said, nothing sent.
    await instructions.evaluate("(el) => { el.value = 'keep \\u001b[2J it'; }")
    await button.click()
    await expect(page.locator(".flash")).to_contain_text("could not compact", timeout=LIVE)
    assert not [e for e in await daemon.deck.events(after=mark, agent_id=agent.id) if _sent(e)]

    await page.locator(".compact-form input[name=text]").fill("keep the greeting")
    await page.locator("#compact-button").click()
    await expect(page.locator(".flash")).to_contain_text("compaction asked for", timeout=LIVE)

    async def boundary() -> StoredEvent | None:
        events = await daemon.deck.events(after=mark, agent_id=agent.id)
        found = [e for e in events if e.type == "notice" and e.data.get("kind") == BOUNDARY]
        return found[0] if found else None

    notice = await eventually(boundary, timeout=60, what="the compaction in the log")
    assert compaction(notice.data)["trigger"] == "manual"
    events = await daemon.deck.events(after=mark, agent_id=agent.id)
    assert [e.data["text"] for e in events if _sent(e)] == ["/compact keep the greeting"]
    await expect(page.locator("#agent-state")).to_have_text("idle", timeout=LIVE)
    await expect(page.locator("#compact-button")).to_be_enabled(timeout=LIVE)
    await snap(page, "agent-compacted.png")


def _sent(event: StoredEvent) -> bool:
    return event.type == "user_message_sent"
