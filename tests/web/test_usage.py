"""Usage over the API and on the Usage page: real agents (the real CLI against the
scripted model) started through the API, their costs summed from the event log;
the page in real Chromium (screenshots in ``artifacts/screenshots/``)."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from agentdeck.core.roles import Role
from agentdeck.settings import Settings
from agentdeck.store.usage import UsageStore
from tests.conftest import make_settings
from tests.governance.test_enforcement import write_profile, write_scenario
from tests.support.waiting import eventually

from .conftest import RunningDaemon, running_daemon
from .dashboard_support import CHROMIUM, browser_tab, logged_in, snap

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

CAP = 2.0  # the fleet's daily cap in the profile the daemon runs with


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    profile = write_profile(tmp_path, budgets={"daily_usd": CAP})
    return make_settings(tmp_path, profile=profile)


@pytest.fixture
async def daemon(settings: Settings) -> AsyncIterator[RunningDaemon]:
    async with running_daemon(settings) as running:
        yield running


async def run_agents(
    api: httpx.AsyncClient, scenario: str, projects: list[str]
) -> list[dict[str, object]]:
    """Start one agent per project through the API; their records once all are done."""
    ids = []
    for project in projects:
        r = await api.post(
            "/api/agents",
            json={"prompt": "go", "scenario": scenario, "project": project, "keep_alive": False},
        )
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])

    async def finished() -> list[dict[str, object]] | None:
        agents = [(await api.get(f"/api/agents/{i}")).json() for i in ids]
        return agents if all(a["state"] in ("done", "error") for a in agents) else None

    return await eventually(finished, timeout=120)


async def test_the_api_sums_the_agents_costs_by_project_and_user(
    daemon: RunningDaemon, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    scenario = write_scenario(tmp_path, "echo one", "echo two")
    agents = await run_agents(api, scenario, ["/p/api", "/p/web", "/p/web"])
    assert all(a["spec"]["owner"] == "admin" for a in agents)  # the legacy token's user
    costs: dict[str, float] = {}
    for a in agents:
        costs[a["spec"]["project"]] = costs.get(a["spec"]["project"], 0.0) + a["cost_usd"]
    r = await api.get("/api/usage", params={"by": "project", "since": "24h", "bucket": "hour"})
    assert r.status_code == 200, r.text
    usage = r.json()
    assert usage["daily_cap_usd"] == CAP
    assert {g["key"]: g["cost_usd"] for g in usage["groups"]}.keys() == costs.keys()
    for g in usage["groups"]:
        assert math.isclose(g["cost_usd"], costs[g["key"]], rel_tol=1e-9)
    assert math.isclose(usage["total"]["cost_usd"], sum(costs.values()), rel_tol=1e-9)
    assert usage["total"]["input_tokens"] == sum(a["input_tokens"] for a in agents)
    assert math.isclose(sum(p["cost_usd"] for p in usage["series"]), sum(costs.values()))
    by_user = (await api.get("/api/usage", params={"by": "user"})).json()
    assert [g["key"] for g in by_user["groups"]] == ["admin"]


async def test_a_period_that_cannot_be_read_is_a_400_in_the_error_shape(
    api: httpx.AsyncClient,
) -> None:
    r = await api.get("/api/usage", params={"since": "7x"})
    assert r.status_code == 400
    assert "cannot read the period '7x'" in r.json()["error"]["message"]
    r = await api.get("/api/usage", params={"by": "team"})
    assert r.status_code == 422 and "by" in r.json()["error"]["message"]
    r = await api.get("/api/usage", params={"since": "400d"})
    assert r.status_code == 400


async def test_the_usage_page_names_a_bad_choice_and_shows_the_default(
    daemon: RunningDaemon,
) -> None:
    async with logged_in(daemon) as web:
        page = await web.get("/usage", params={"since": "soon"})
        assert page.status_code == 400
        assert "cannot read the period" in page.text and "<svg" in page.text
        ok = await web.get("/usage")
        assert ok.status_code == 200 and "Nothing spent in this period" in ok.text
        assert 'class="limit"' in ok.text  # the fleet's cap, drawn even on an empty chart


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")
async def test_the_usage_page_in_a_browser(
    daemon: RunningDaemon, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    from playwright.async_api import expect

    scenario = write_scenario(tmp_path, "echo one", "echo two")
    first = await run_agents(api, scenario, ["/srv/shop", "/srv/blog"])
    one = max(float(a["cost_usd"]) for a in first)  # type: ignore[arg-type]
    spent = sum(float(a["cost_usd"]) for a in first)  # type: ignore[arg-type]
    usage = UsageStore(daemon.deck._store)
    # The third agent takes admin past 80 % of a budget it stays under: one warning.
    await usage.set_budget("user", "admin", (spent + one) / 0.9)
    await usage.set_budget("project", "/srv/shop", 10)
    await run_agents(api, scenario, ["/srv/shop"])
    warnings = await daemon.deck.budget_warnings(0)
    assert [(w["scope"], w["name"]) for w in warnings] == [("user", "admin")]

    async with browser_tab(daemon) as page:
        await page.click("nav a[href='/usage']")
        await expect(page).to_have_url(f"{daemon.url}/usage")
        await expect(page.locator("#usage-groups tbody tr")).to_have_count(2)
        await expect(page.locator("#usage-groups")).to_contain_text("/srv/shop")
        await expect(page.locator(".usage-warnings")).to_contain_text("user admin's daily budget")
        cost = page.locator("#usage-cost svg")
        await expect(cost.locator("line.limit")).to_have_count(1)
        await expect(cost.locator(".limit-label")).to_contain_text("daily fleet cap $2.00")
        assert await cost.locator("rect.bar").count() == 2  # today's bar: one segment a project
        await expect(page.locator("#usage-budgets .budget-bar.warn")).to_have_count(1)
        await snap(page, "usage-by-project.png")

        await page.select_option("select[name=by]", "user")
        await page.select_option("select[name=bucket]", "hour")
        await page.click("form.filters button")
        await expect(page).to_have_url(f"{daemon.url}/usage?since=7d&bucket=hour&by=user")
        await expect(page.locator("#usage-groups tbody tr")).to_have_count(1)
        await expect(page.locator("#usage-groups")).to_contain_text("admin")
        await expect(page.locator("#usage-cost line.limit")).to_have_count(0)
        await snap(page, "usage-by-user-hourly.png")


async def test_budgets_over_the_api_refuse_bad_bodies_and_need_an_admin(
    daemon: RunningDaemon, api: httpx.AsyncClient
) -> None:
    """What ``RemoteDeck`` never sends (it checks first) is refused by the daemon too,
    in the error shape, and changes nothing; a viewer reads budgets, only an admin
    sets or removes one."""
    for body in (
        {"scope": "user", "name": "ann", "daily_usd": -1},
        {"scope": "user", "name": "ann", "daily_usd": True},
        {"scope": "user", "name": "ann", "daily_usd": "5"},
        {"scope": "team", "name": "ann", "daily_usd": 5},
        {"scope": "user", "name": "", "daily_usd": 5},
        {"scope": "user", "name": "   ", "daily_usd": 5},
        {"scope": "user", "name": "a\x00b", "daily_usd": 5},
        {"scope": "user", "name": "ann", "daily_usd": 5, "extra": 1},
    ):
        r = await api.put("/api/budgets", json=body)
        assert r.status_code in (400, 422), (body, r.text)
        assert r.json()["error"]["message"], body
    r = await api.delete("/api/budgets", params={"scope": "user", "name": "nobody"})
    assert r.status_code == 404 and "no user budget" in r.json()["error"]["message"]
    assert (await api.get("/api/budgets")).json() == {"budgets": []}

    r = await api.put("/api/budgets", json={"scope": "user", "name": "ann", "daily_usd": 5})
    assert r.status_code == 200, r.text
    assert r.json() == {"scope": "user", "name": "ann", "daily_usd": 5.0, "spent_today_usd": 0.0}

    identity = daemon.deck.identity
    await identity.bootstrap(daemon.token)
    for role in (Role.VIEWER, Role.OPERATOR):
        await identity.add_user(f"{role}1", role)
        _, secret = await identity.create_token(f"{role}1", name="budgets")
        async with daemon.client(token=secret) as member:
            listed = await member.get("/api/budgets")
            assert [b["name"] for b in listed.json()["budgets"]] == ["ann"]
            body = {"scope": "user", "name": "ann", "daily_usd": 50}
            assert (await member.put("/api/budgets", json=body)).status_code == 403
            params = {"scope": "user", "name": "ann"}
            assert (await member.delete("/api/budgets", params=params)).status_code == 403
    assert (await api.get("/api/budgets")).json()["budgets"][0]["daily_usd"] == 5.0
    r = await api.delete("/api/budgets", params={"scope": "user", "name": "ann"})
    assert r.status_code == 204
