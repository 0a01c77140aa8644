"""The agent page shows the text as it is written (headless Chromium, a real
daemon, the real CLI on the scripted model streaming in small chunks): a plain
text entry grows at the end of the transcript while the agent runs, then the
text's own entry replaces it, once. Screenshots in ``artifacts/screenshots/``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
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
PIECES = " ".join(f"piece{i}" for i in range(150))
TEXT = f"Writing it out: <b>not bold</b> {PIECES} all finished."


@pytest.fixture
async def page(daemon: RunningDaemon) -> AsyncIterator[Page]:
    async with browser_tab(daemon) as tab:
        yield tab


async def test_the_agent_page_shows_the_text_as_it_is_written(
    daemon: RunningDaemon, page: Page, tmp_path: Path
) -> None:
    scenario = tmp_path / "write.yaml"
    # The text streams only once the page follows the agent: its first call waits
    # for a file the test makes then (a stream left to the clock could end before a
    # loaded machine had the page open).
    gate = {"name": "Bash", "input": {"command": "until [ -e go ]; do sleep 0.1; done"}}
    turns = [{"reply": [{"tool_use": gate}]}, {"chunk_delay": 0.05, "reply": [{"text": TEXT}]}]
    scenario.write_text(yaml.safe_dump({"name": "write", "turns": turns}))
    agent = await daemon.deck.create_agent(
        AgentSpec(prompt="write it", name="writer", scenario=str(scenario), profile="permissive")
    )
    await page.goto(f"{daemon.url}/agents/{agent.id}")
    await expect(page.locator("#transcript")).to_contain_text("until [ -e go ]", timeout=LIVE)
    cwd = (await daemon.deck.get_agent(agent.id)).cwd
    assert cwd
    (Path(cwd) / "go").touch()
    writing = page.locator("#transcript li.writing")
    await expect(writing).to_contain_text("piece20 ", timeout=LIVE)
    await expect(page.locator("#agent-state")).to_have_text("running")
    assert "finished" not in await writing.inner_text()
    assert "<b>not bold</b>" in await writing.inner_text()  # text, never HTML
    await page.screenshot(path=Path("artifacts/screenshots/agent-writing.png"))

    transcript = page.locator("#transcript")
    await expect(transcript).to_contain_text("finished.", timeout=LIVE)
    await expect(writing).to_have_count(0)
    await expect(page.locator("#agent-state")).to_have_text("idle", timeout=LIVE)
    text = await transcript.inner_text()
    assert text.count("piece149") == 1, text
    assert await transcript.locator("b").count() == 0  # the model's "<b>": text
    await snap(page, "agent-written.png")
