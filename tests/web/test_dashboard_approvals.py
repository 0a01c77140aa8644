"""The approval flow on the dashboard, over real HTTP with the login cookie: the
inbox, the nav badge, the agent page's card, answering (and answering twice).

The ``cli`` tests run a real Claude Code agent on the scripted model under a
profile that asks before every command; the rest use a request row on its own.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.approvals import Approval, ApprovalState
from agentdeck.core.events import EventType
from agentdeck.web.inbox import count_label, safe_next
from tests.support.governance import ask_profile_and_scenario
from tests.support.waiting import eventually, wait_event

from .conftest import RunningDaemon
from .dashboard_support import CHROMIUM, SCREENSHOTS, chromium, logged_in, login_url
from .test_dashboard import make_agent, read_sse_until, seed

pytestmark = pytest.mark.anyio


async def asking_agent(daemon: RunningDaemon, tmp_path: Path, name: str) -> tuple[Agent, Approval]:
    """A real agent blocked on its approval request."""
    profile, scenario = ask_profile_and_scenario(tmp_path)
    agent = await daemon.deck.create_agent(
        AgentSpec(prompt="make the file", name=name, scenario=scenario, profile=profile)
    )

    async def pending() -> list[Approval]:
        return await daemon.deck.approvals(states=[ApprovalState.PENDING], agent_id=agent.id)

    (approval,) = await eventually(pending, timeout=60, what="a pending approval")

    async def waiting() -> bool:
        current = await daemon.deck.get_agent(agent.id)
        return current.state == AgentState.AWAITING_PERMISSION

    await eventually(waiting, timeout=30, what="the agent to wait for permission")
    return agent, approval


async def wait_state(daemon: RunningDaemon, agent_id: str, state: AgentState) -> Agent:
    async def reached() -> Agent | None:
        agent = await daemon.deck.get_agent(agent_id)
        return agent if agent.state == state else None

    return await eventually(reached, timeout=60, what=f"agent {agent_id} to be {state}")


def nav_count(html: str) -> str:
    found = re.search(r'id="approvals-count"[^>]*>([^<]*)</span>', html)
    assert found, "no approvals count in the top bar"
    return found.group(1)


@pytest.mark.cli
async def test_the_inbox_shows_a_real_request_and_allow_lets_the_tool_run(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    async with logged_in(daemon) as web:
        # The inbox stream replays from the start: the card arrives as a fragment.
        inbox_stream = f"/ui/stream?board=false&activity=false&approvals=true&after={0}"
        agent, approval = await asking_agent(daemon, tmp_path, "toucher")
        streamed = await read_sse_until(web, inbox_stream, f'id="approval-{approval.id}"')
        assert "beforeend:#pending-approvals" in streamed and 'id="approvals-count"' in streamed

        inbox = await web.get("/approvals")
        assert inbox.status_code == 200
        assert nav_count(inbox.text) == "1"
        card = inbox.text[inbox.text.index(f'id="approval-{approval.id}"') :]
        assert f'href="/agents/{agent.id}">toucher</a>' in card
        assert "Bash(touch made.txt)" in card
        assert approval.reason in card and "the profile's default" in card
        assert "denied automatically in" in card and "data-until=" in card
        for button in ("Allow once", "Allow always", "Deny", "Deny always"):
            assert f">{button}</button>" in card
        assert 'name="scope"' in card and 'value="persistent"' in card
        assert nav_count((await web.get("/")).text) == "1"
        assert nav_count((await web.get("/activity")).text) == "1"
        agent_page = await web.get(f"/agents/{agent.id}")
        assert f'id="approval-{approval.id}"' in agent_page.text
        assert "awaiting permission" in agent_page.text

        origin = {"origin": daemon.url, "hx-request": "true"}
        form = {"answer": "allow", "scope": "session", "message": "", "next": "/approvals"}
        foreign = await web.post(
            f"/ui/approvals/{approval.id}", data=form, headers={"origin": "http://evil.example"}
        )
        assert foreign.status_code == 403
        answered = await web.post(f"/ui/approvals/{approval.id}", data=form, headers=origin)
        assert answered.status_code == 200, answered.text
        assert "approval-allowed" in answered.text and "user:web" in answered.text
        assert nav_count(answered.text) == ""  # the badge, out of band: none pending

        await wait_state(daemon, agent.id, AgentState.IDLE)
        assert (Path((await daemon.deck.get_agent(agent.id)).cwd) / "made.txt").exists()
        stored = await daemon.deck.approval(approval.id)
        assert stored.state == ApprovalState.ALLOWED and stored.answered_by == "user:web:admin"

        again = await web.post(f"/ui/approvals/{approval.id}", data=form, headers=origin)
        assert again.status_code == 409
        assert "Already answered: allowed by user:web" in again.text
        plain = await web.post(
            f"/ui/approvals/{approval.id}", data=form, headers={"origin": daemon.url}
        )
        assert plain.status_code == 409 and "Already answered" in plain.text
        inbox = await web.get("/approvals")
        assert 'id="pending-approvals"></div>' in inbox.text
        answered_part = inbox.text[inbox.text.index('id="answered-approvals"') :]
        assert f'id="approval-{approval.id}"' in answered_part and "Allowed" in answered_part


@pytest.mark.cli
async def test_deny_with_a_message_reaches_the_agent(daemon: RunningDaemon, tmp_path: Path) -> None:
    agent, approval = await asking_agent(daemon, tmp_path, "refused")
    async with logged_in(daemon) as web:
        # A plain form post (no JavaScript): a redirect back to the page it came from.
        denied = await web.post(
            f"/ui/approvals/{approval.id}",
            data={
                "answer": "deny",
                "scope": "session",
                "message": "Not in this repository, please.",
                "next": f"/agents/{agent.id}",
            },
            headers={"origin": daemon.url},
        )
        assert denied.status_code == 303
        assert denied.headers["location"] == f"/agents/{agent.id}"
        await wait_state(daemon, agent.id, AgentState.IDLE)
        returned = await wait_event(daemon.deck._store, agent.id, EventType.TOOL_RETURNED)
        assert returned.data["is_error"] and "Not in this repository" in returned.data["output"]
        page = await web.get(f"/agents/{agent.id}")
        assert "permission deny" in page.text and "Not in this repository, please." in page.text
        assert f'id="approval-{approval.id}"' not in page.text  # no longer pending
    assert not (Path(agent.cwd) / "made.txt").exists()


async def test_answering_a_request_whose_agent_is_gone(daemon: RunningDaemon) -> None:
    """No CLI: a request row of a stopped agent; the answer is kept for its resume."""
    agent = make_agent("a1b2c3d4", AgentState.INTERRUPTED, name="sleepy")
    await seed(daemon.deck._store, agent)
    now = time.time()
    approval = Approval(
        id="ap0123456789",
        agent_id=agent.id,
        tool="Edit",
        input={"file_path": "/tmp/work/src/app.py", "old_string": "a", "new_string": "b"},
        reason="asks: no rule allows it",
        grant_key="profile:default",
        state=ApprovalState.PENDING,
        created_at=now,
        expires_at=now + 600,
        rule="Edit(/src/**)",
    )
    await daemon.deck._runner.governor.approvals.create(approval)
    async with logged_in(daemon) as web:
        inbox = await web.get("/approvals")
        assert (
            "Edit(/tmp/work/src/app.py)" in inbox.text
            and "<code>Edit(/src/**)</code>" in inbox.text
        )
        assert nav_count(inbox.text) == "1"
        assert "9m 5" in inbox.text  # the time left, counted down by the page
        badge = await web.get("/ui/approvals/count")
        assert nav_count(badge.text) == "1"

        htmx = {"origin": daemon.url, "hx-request": "true"}
        bad = await web.post(f"/ui/approvals/{approval.id}", data={"answer": "x"}, headers=htmx)
        assert bad.status_code == 400 and "Allow once" in bad.text
        missing = await web.post("/ui/approvals/apnope00", data={"answer": "deny"}, headers=htmx)
        assert missing.status_code == 404
        done = await web.post(
            f"/ui/approvals/{approval.id}",
            data={"answer": "deny_always", "scope": "persistent", "message": "no <b>edits</b>"},
            headers=htmx,
        )
        assert done.status_code == 200, done.text
        assert "Denied" in done.text and "remembered (persistently)" in done.text
        assert "no &lt;b&gt;edits&lt;/b&gt;" in done.text  # escaped, never markup
    stored = await daemon.deck.get_agent(agent.id)
    assert any("no <b>edits</b>" in r for r in stored.extra["reports"])


def test_helpers() -> None:
    assert count_label(0) == "" and count_label(3) == "3" and count_label(100) == "99+"
    assert safe_next("/agents/x") == "/agents/x"
    bad_ones = ("https://evil.example/", "//evil.example", "/\\evil", "", "/\t/evil.example")
    for bad in (*bad_ones, "/\n/evil.example", "/\r/evil.example"):
        assert safe_next(bad) == "/approvals"


async def test_the_agent_page_polls_the_badge(daemon: RunningDaemon) -> None:
    agent = make_agent("e5f6a7b8", AgentState.IDLE)
    await seed(daemon.deck._store, agent)
    async with logged_in(daemon) as web:
        page = await web.get(f"/agents/{agent.id}")
        assert 'hx-get="/ui/approvals/count?poll=true"' in page.text
        board = await web.get("/")
        assert 'hx-get="/ui/approvals/count' not in board.text  # live through its stream
        assert isinstance(board, httpx.Response) and nav_count(board.text) == ""


@pytest.mark.cli
@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")
async def test_in_the_browser_the_badge_appears_live_and_allow_always_lets_the_agent_on(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    from playwright.async_api import expect

    live = 60_000  # ms: a real CLI run on a busy box
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    profile, scenario = ask_profile_and_scenario(tmp_path)
    async with chromium() as browser:
        context = await browser.new_context(viewport={"width": 1400, "height": 900})
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        await page.goto(login_url(daemon))
        await expect(page.get_by_text("Start an agent")).to_be_visible()
        badge = page.locator("#approvals-count")
        await expect(badge).to_be_hidden()

        # The board is open; the request must show in the top bar without a reload.
        agent = await daemon.deck.create_agent(
            AgentSpec(prompt="make the file", name="toucher", scenario=scenario, profile=profile)
        )
        await expect(badge).to_have_text("1", timeout=live)
        await expect(page.locator(f"#agent-{agent.id} .badge")).to_have_text("awaiting permission")

        # The agent's page shows the same card, above its transcript.
        await page.locator(f"#agent-{agent.id}").get_by_role("link", name="toucher").click()
        await expect(page.locator("#agent-approvals .approval-pending")).to_contain_text(
            "Bash(touch made.txt)"
        )
        await expect(page.locator("#agent-state")).to_have_text("awaiting permission")
        await expect(badge).to_have_text("1")
        await page.screenshot(path=SCREENSHOTS / "approvals-agent.png")

        await page.get_by_role("link", name=re.compile("^Approvals")).click()
        await expect(page).to_have_url(daemon.url + "/approvals")
        card = page.locator("#pending-approvals .approval-pending")
        await expect(card).to_have_count(1)
        await expect(card.locator(".approval-call")).to_have_text("Bash(touch made.txt)")
        await expect(card.locator("[data-until]")).to_have_text(re.compile(r"^9m \d\ds$"))
        await page.evaluate("window.scrollTo(0, 0)")
        await page.screenshot(path=SCREENSHOTS / "approvals-inbox.png", full_page=True)

        await card.locator("textarea[name=message]").fill("Go ahead, and keep it tidy.")
        await card.locator("select[name=scope]").select_option("persistent")
        await card.get_by_role("button", name="Allow always").click()
        answered = page.locator("#answered-approvals .approval-allowed")
        await expect(answered).to_contain_text("Allowed by user:web")
        await expect(answered).to_contain_text("remembered (persistently)")
        await expect(badge).to_be_hidden()
        await expect(page.locator(".approvals-empty")).to_be_visible()
        await page.evaluate("window.scrollTo(0, 0)")
        await page.screenshot(path=SCREENSHOTS / "approvals-answered.png", full_page=True)

        await answered.get_by_role("link", name="toucher").click()
        await expect(page.locator("#agent-state")).to_have_text("idle", timeout=live)
        await expect(page.locator("#transcript")).to_contain_text("permission allow")
        await expect(page.locator("#transcript")).to_contain_text("Made it.")
        await context.close()
        assert errors == [], f"JavaScript errors on the page: {errors}"
    stored = (await daemon.deck.approvals(states=None))[0]
    assert stored.remember == "persistent" and stored.message == "Go ahead, and keep it tidy."
    assert (Path(agent.cwd) / "made.txt").exists()
