"""The policy what-if on the dashboard's Policy page and over the API: a real agent
(the real CLI, the scripted model) records its calls; the page, in real Chromium,
replays them under a built-in profile and shows what would change, a hostile input
as text. Screenshots land in ``artifacts/screenshots/``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from playwright.async_api import Page, expect

from agentdeck.core.agent import AgentSpec
from tests.support.waiting import eventually

from .conftest import RunningDaemon
from .dashboard_support import CHROMIUM, browser_tab, snap

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

HOSTILE = "echo '<script>window.pwned=1</script><img src=x onerror=window.pwned=2>'"


async def recorded(daemon: RunningDaemon, tmp_path: Path, *commands: str) -> str:
    turns: list[dict[str, Any]] = [
        {"reply": [{"tool_use": {"name": "Bash", "input": {"command": c}}}]} for c in commands
    ]
    script = tmp_path / "calls.yaml"
    script.write_text(
        yaml.safe_dump({"name": "page-calls", "turns": [*turns, {"reply": [{"text": "ok"}]}]})
    )
    agent = await daemon.deck.create_agent(
        AgentSpec(prompt="go", name="recorded", scenario=str(script), profile="permissive"),
        keep_alive=False,
    )

    async def done() -> bool:
        return (await daemon.deck.get_agent(agent.id)).state.is_final

    await eventually(done, timeout=60, what="the recorded agent to finish")
    return agent.id


@pytest.fixture
async def page(daemon: RunningDaemon) -> AsyncIterator[Page]:
    async with browser_tab(daemon) as tab:
        yield tab


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")
async def test_the_policy_page_replays_history_under_a_profile(
    daemon: RunningDaemon, page: Page, tmp_path: Path
) -> None:
    agent_id = await recorded(daemon, tmp_path, "echo hi", "ls", HOSTILE)
    await page.goto(f"{daemon.url}/policy")
    await expect(page.locator("nav a[aria-current=page]")).to_have_text("Policy")
    await expect(page.locator("table.profiles")).to_contain_text("strict")
    await snap(page, "policy-page.png")

    form = page.locator("#whatif-form")
    await form.locator("select[name=profile]").select_option("strict")
    await form.locator("select[name=since]").select_option("24h")
    await form.locator("button").click()
    totals = page.locator("#whatif-totals")
    await expect(totals).to_contain_text("strict")
    await expect(totals.locator(".whatif-changed")).to_have_text("2")  # both echoes denied now
    group = page.locator(".whatif-group").first
    await expect(group).to_contain_text("allow→deny")
    await expect(group).to_contain_text("no rule (the profile's default or tool list)")
    await expect(group).to_contain_text('{"command": "echo hi"}')
    await expect(group).to_contain_text("<script>window.pwned=1</script>")  # as text
    assert await page.evaluate("window.pwned") is None
    await snap(page, "policy-whatif.png")

    await form.locator("input[name=agent]").fill("no-such-agent")
    await form.locator("button").click()
    await expect(page.locator(".flash-error")).to_contain_text("no-such-agent")
    await form.locator("input[name=agent]").fill(agent_id)
    await form.locator("select[name=profile]").select_option("permissive")
    await form.locator("button").click()
    await expect(page.locator(".whatif-none")).to_have_text("No call's decision would change.")


async def test_the_api_route_is_strict_and_answers_the_record(
    daemon: RunningDaemon, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    agent_id = await recorded(daemon, tmp_path, "echo hi")
    r = await api.post("/api/policy/replay", json={"profile": "strict", "agent": agent_id})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["calls"], body["changed"], body["groups"][0]["change"]) == (1, 1, "allow→deny")
    for bad in (
        {"profile": "strict", "since": 5},  # unknown field
        {"profile": "strict", "since_seconds": "7d"},  # a string is not a number
        {"profile": ""},
        {"profile": "x.yaml", "profile_text": "#" * (300 * 1024)},
    ):
        refused = await api.post("/api/policy/replay", json=bad)
        assert refused.status_code == 422, (bad, refused.text)
    unknown = await api.post("/api/policy/replay", json={"profile": "no-such"})
    assert unknown.status_code == 422 and "no such profile" in unknown.text
    path = await api.post("/api/policy/replay", json={"profile": "/etc/passwd"})
    assert path.status_code == 422 and "root:" not in path.text
