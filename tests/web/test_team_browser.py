"""The dashboard's login in a real browser: a form that takes a token, who is logged
in, no steering buttons for a viewer, log out; and sessions that expire."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, expect

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.approvals import Approval, ApprovalState
from agentdeck.core.events import spawned_events
from agentdeck.core.roles import Role
from tests.conftest import make_settings
from tests.support.waiting import eventually

from .conftest import RunningDaemon, running_daemon
from .dashboard_support import CHROMIUM, chromium, snap

pytestmark = [pytest.mark.anyio]

NO_CHROMIUM = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")


async def _seed(daemon: RunningDaemon) -> tuple[Agent, Approval]:
    now = time.time()
    agent = Agent(
        id="agteam00001", name="steady", state=AgentState.DONE, spec=AgentSpec(prompt="p"),
        cwd="/tmp", created_at=now, updated_at=now, session_id="s-1",
    )  # fmt: skip
    await daemon.deck._store.record(spawned_events(agent), agent)
    approval = Approval(
        id="apteam000001", agent_id=agent.id, tool="Bash", input={"command": "make"},
        reason="asks: no rule allows it", grant_key="profile:default",
        state=ApprovalState.PENDING, created_at=now, expires_at=now + 600,
    )  # fmt: skip
    await daemon.deck._runner.governor.approvals.create(approval)
    return agent, approval


async def _token(daemon: RunningDaemon, name: str, role: Role) -> str:
    await daemon.deck.identity.bootstrap(daemon.token)
    await daemon.deck.identity.add_user(name, role)
    return (await daemon.deck.identity.create_token(name, name="browser"))[1]


async def _log_in(page: Page, daemon: RunningDaemon, token: str) -> None:
    await page.goto(f"{daemon.url}/")
    await expect(page.get_by_role("link", name="Log in")).to_be_visible()
    await page.goto(f"{daemon.url}/login")
    await page.get_by_label("Token").fill(token)
    await page.get_by_role("button", name="Log in").click()
    await expect(page).to_have_url(f"{daemon.url}/")


@pytest.mark.browser
@NO_CHROMIUM
@pytest.mark.parametrize("role", [Role.VIEWER, Role.OPERATOR])
async def test_a_viewer_sees_no_steering_buttons(daemon: RunningDaemon, role: Role) -> None:
    agent, approval = await _seed(daemon)
    token = await _token(daemon, "carol", role)
    steers = role is not Role.VIEWER
    async with chromium() as browser:
        page = await (await browser.new_context()).new_page()
        await page.goto(f"{daemon.url}/login")
        await page.get_by_label("Token").fill("not-the-token-at-all-123456")
        await page.get_by_role("button", name="Log in").click()
        await expect(page.get_by_role("alert")).to_contain_text("wrong, revoked or expired")
        await _log_in(page, daemon, token)
        assert token not in page.url
        await expect(page.locator(".whoami")).to_contain_text(f"carol {role}")
        await expect(page.get_by_text("Start an agent")).to_have_count(1 if steers else 0)
        await page.goto(f"{daemon.url}/agents/{agent.id}")
        await expect(page.locator("#agent-header")).to_be_visible()
        await expect(page.get_by_role("button", name="Resume")).to_have_count(1 if steers else 0)
        await page.goto(f"{daemon.url}/approvals")
        await expect(page.locator(f"#approval-{approval.id}")).to_be_visible()
        allow = page.locator(f"#approval-{approval.id}").get_by_role("button", name="Allow once")
        await expect(allow).to_have_count(1 if steers else 0)
        await snap(page, f"team-{role}.png")
        await page.get_by_role("button", name="Log out").click()
        await expect(page.get_by_label("Token")).to_be_visible()
        await page.goto(f"{daemon.url}/approvals")
        await expect(page.get_by_role("link", name="Log in")).to_be_visible()


async def test_a_session_expires(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, session_ttl_seconds=1.0)
    async with (
        running_daemon(settings) as daemon,
        httpx.AsyncClient(base_url=daemon.url, timeout=30) as browser,
    ):
        r = await browser.post("/login", data={"token": daemon.token})
        assert r.status_code == 303 and "max-age=1" in r.headers["set-cookie"].lower()
        session = browser.cookies["agentdeck_session"]
        # Held on to past its Max-Age, as a careless client would: the daemon still ends it.
        cookie = {"cookie": f"agentdeck_session={session}"}
        async with httpx.AsyncClient(base_url=daemon.url, headers=cookie, timeout=30) as kept:
            me = await kept.get("/api/whoami")
            assert me.status_code == 200 and me.json()["user"] == "admin"

            async def expired() -> bool:
                return (await kept.get("/api/whoami")).status_code == 401

            await eventually(expired, timeout=30, what="the session to expire")
