"""The agent page's diff, in a real browser: an agent in a worktree on the real
Claude Code CLI edits a file and writes one; the page lists both with their line
counts and shows the patch highlighted, with a secret it wrote redacted.

Screenshots land in ``artifacts/screenshots/``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from agentdeck.core.agent import AgentSpec

from ..worktrees.conftest import make_repo
from ..worktrees.test_agents import scenario
from .conftest import RunningDaemon
from .dashboard_support import CHROMIUM, browser_tab, snap

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.browser,
    pytest.mark.cli,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed"),
]

LIVE = 60_000  # ms
KEY = "sk-ant-api03-" + "Wq7" * 30


@pytest.fixture
async def page(daemon: RunningDaemon) -> AsyncIterator[Page]:
    async with browser_tab(daemon) as tab:
        yield tab


async def test_the_agent_page_shows_what_it_changed_on_its_branch(
    daemon: RunningDaemon, page: Page, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    notes = f"add() adds now\nANTHROPIC_API_KEY={KEY}\n"
    agent = await daemon.deck.create_agent(
        AgentSpec(
            prompt="fix add", name="fixer", cwd=str(repo), workspace="worktree",
            scenario=str(scenario(tmp_path, "fixer", notes)),
        ),
        keep_alive=False,
    )  # fmt: skip
    await page.goto(f"{daemon.url}/agents/{agent.id}")
    panel = page.locator("#agent-diff")
    await expect(panel).to_contain_text(f"Changes on agentdeck/{agent.id}/fixer", timeout=LIVE)
    files = panel.locator(".diff-files li")
    await expect(files).to_have_count(2, timeout=LIVE)  # live: it polls while the agent works
    await expect(files.filter(has_text="calc.py")).to_contain_text("+1 \u22121")
    await expect(files.filter(has_text="fixer.md")).to_contain_text("+2 \u22120")
    patch = panel.locator(".diff-patch")
    await expect(patch).to_contain_text("return a + b")
    await expect(patch).to_contain_text("ANTHROPIC_API_KEY=[REDACTED:anthropic-key]")
    assert KEY not in await page.content()
    # Highlighted on the server: added and removed lines carry their own colours.
    added = patch.locator("span", has_text="+    return a + b")
    assert await added.count() >= 1
    assert (await added.first.get_attribute("style") or "").startswith("color")
    await snap(page, "agent-diff.png")

    # The Merge button queues the branch; the queue view follows it to its end.
    # Its turn's end commits what it wrote.
    await expect(page.locator("#agent-state")).to_have_text("done", timeout=LIVE)
    form = page.locator("#agent-merge form")
    await form.locator("input[name=test]").fill("echo checking calc; exit 3")
    await form.locator("button.merge-button").click()
    await expect(page).to_have_url(f"{daemon.url}/merges", timeout=LIVE)
    refused = page.locator(".merges-ended tr.merge-row").first
    await expect(refused).to_contain_text("refused", timeout=LIVE)
    await expect(refused).to_contain_text(f"tests failed on agentdeck/{agent.id}/fixer")
    await refused.locator("summary").click()
    await expect(refused.locator(".merge-output")).to_contain_text("checking calc")
    await page.goto(f"{daemon.url}/agents/{agent.id}")
    await expect(page.locator("#agent-merge .merge-recent")).to_contain_text("refused")
    await snap(page, "agent-merge.png")
    form = page.locator("#agent-merge form")
    await form.locator("input[name=test]").fill(
        "python3 -c 'import calc; assert calc.add(2, 3) == 5'"
    )
    await form.locator("button.merge-button").click()
    await expect(page).to_have_url(f"{daemon.url}/merges", timeout=LIVE)
    landed = page.locator(".merges-ended tr.merge-row").first
    await expect(landed).to_contain_text("landed", timeout=LIVE)
    assert "return a + b" in (repo / "calc.py").read_text()  # main moved, its files followed
    await expect(page.locator(".merges-pending")).to_contain_text("Nothing waits to merge.")
    await snap(page, "merge-queue.png")

    # The timeline: a checkpoint before each of its two file changes; rewinding to the
    # first shows what would change, and only the confirmation changes it.
    await page.goto(f"{daemon.url}/agents/{agent.id}")
    timeline = page.locator("#agent-checkpoints .checkpoint")
    await expect(timeline).to_have_count(2)
    await expect(timeline.first).to_contain_text("#2")  # newest first
    await expect(timeline.first).to_contain_text("Write(fixer.md)")
    await expect(timeline.first).to_contain_text("1 modified since #1")
    await expect(timeline.last).to_contain_text("Edit(calc.py)")
    await snap(page, "agent-checkpoints.png")
    await timeline.last.locator(".rewind-button").click()
    await expect(page.locator("h1")).to_contain_text("to checkpoint #1?")
    files = page.locator(".rewind-files")
    await expect(files).to_contain_text("restore calc.py")
    await expect(files).to_contain_text("remove fixer.md")
    await expect(page.locator(".diff-patch")).to_contain_text("+    return a - b")
    work = Path((await daemon.deck.get_agent(agent.id)).cwd)
    assert (work / "fixer.md").exists()  # the preview changed nothing
    await snap(page, "rewind-preview.png")
    await page.locator("button.confirm-rewind").click()
    await expect(page).to_have_url(f"{daemon.url}/agents/{agent.id}#agent-checkpoints")
    assert not (work / "fixer.md").exists()
    assert (work / "calc.py").read_text().endswith("a - b\n")
    await expect(page.locator("#agent-checkpoints .checkpoint")).to_have_count(3)  # its undo
    await expect(page.locator("#transcript")).to_contain_text("rewound to checkpoint 1 by user:web")
