"""The dashboard's memory pages: search, a record, Forget. In real Chromium
(Playwright) and, for what a browser would hide, over plain HTTP with the
session cookie. Screenshots land in ``artifacts/screenshots/``."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.support.memory_records import Seeded, records, write

from .conftest import RunningDaemon
from .dashboard_support import CHROMIUM, SCREENSHOTS, chromium, logged_in, login_url

pytestmark = pytest.mark.anyio

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed"
)
UI = 15_000  # ms: an htmx round trip on a busy 2-core box


@pytest.fixture
async def seeded(daemon: RunningDaemon, tmp_path: Path) -> Seeded:
    seeded = records(tmp_path / "work")
    await write(daemon.deck._memory, seeded)
    return seeded


@pytest.fixture
async def web(daemon: RunningDaemon) -> AsyncIterator[httpx.AsyncClient]:
    async with logged_in(daemon) as client:
        yield client


@pytest.mark.browser
@needs_chromium
async def test_search_open_forget_in_a_browser(daemon: RunningDaemon, seeded: Seeded) -> None:
    from playwright.async_api import expect

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    async with chromium() as browser:
        context = await browser.new_context(viewport={"width": 1300, "height": 800})
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("dialog", lambda dialog: dialog.accept())
        await page.goto(login_url(daemon))
        await page.get_by_role("link", name="Memory", exact=True).click()
        await expect(page).to_have_url(daemon.url + "/memory")
        intro = page.locator(".memory-page")
        await expect(intro).to_contain_text("2 observations, 1 summary, 2 projects")

        # Typing searches (htmx), no submit needed.
        await page.get_by_label("search memory").fill("flaky")
        hits = page.locator(".memory-hit")
        await expect(hits).to_have_count(2, timeout=UI)
        hit = page.locator(f"#hit-{seeded.flaky.id}")
        await expect(hit.locator(".memory-kind")).to_have_text("observation")
        await expect(hit).to_contain_text("2h ago")
        await expect(hit.locator("mark").first).to_have_text("flaky")
        await page.screenshot(path=SCREENSHOTS / "memory-search.png", full_page=True)

        # The project filter narrows it.
        await page.get_by_label("project directory").fill(str(seeded.project_b))
        await page.get_by_label("project directory").press("Enter")
        await expect(page.locator("#memory-results")).to_contain_text(
            "No memory matches", timeout=UI
        )
        await page.get_by_label("project directory").fill("")
        await page.get_by_role("button", name="Search").click()
        await expect(hits).to_have_count(2, timeout=UI)
        busy = re.compile("htmx-request")
        await expect(page.locator("form.memory-search")).not_to_have_class(busy, timeout=UI)

        await hit.locator("a.memory-title").click()
        await expect(page).to_have_url(re.compile(rf"/memory/{seeded.flaky.id}\?back=.+"))
        await expect(page.locator("h1")).to_contain_text(seeded.flaky.id)
        await expect(page.locator(".memory-text")).to_contain_text(seeded.flaky.output_excerpt)
        await page.screenshot(path=SCREENSHOTS / "memory-record.png", full_page=True)

        await page.get_by_role("button", name="Forget").click()
        await expect(page).to_have_url(
            f"{daemon.url}/memory?q=flaky&forgotten={seeded.flaky.id}", timeout=UI
        )
        await expect(page.locator(".flash-ok")).to_contain_text(seeded.flaky.id)
        await expect(hits).to_have_count(1)
        await expect(page.locator(f"#hit-{seeded.fixed.id}")).to_be_visible()
        await expect(page.locator(f"#hit-{seeded.flaky.id}")).to_have_count(0)
        await context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"
    hits_left = await daemon.deck._memory.search("flaky")
    assert [h.id for h in hits_left] == [seeded.fixed.id]


async def test_the_page_searches_without_javascript(web: httpx.AsyncClient, seeded: Seeded) -> None:
    page = await web.get("/memory", params={"q": "calc"})
    assert page.status_code == 200
    assert f'id="hit-{seeded.calc.id}"' in page.text
    assert 'aria-current="page">Memory' in page.text
    fragment = await web.get("/ui/memory/results", params={"q": "flaky"})
    assert fragment.text.count('class="memory-hit ') == 2
    assert "<html" not in fragment.text
    empty = await web.get("/ui/memory/results", params={"q": ""})
    assert "Type words to search" in empty.text


async def test_snippets_and_queries_are_escaped(
    daemon: RunningDaemon, web: httpx.AsyncClient, seeded: Seeded
) -> None:
    from dataclasses import replace

    evil = replace(
        seeded.calc, id="ob0000000000c1", output_excerpt="<script>alert(1)</script> calc"
    )
    await daemon.deck._memory.add_observation(evil)
    page = await web.get("/memory", params={"q": "<script>alert calc"})
    assert "<script>alert" not in page.text
    assert "&lt;script&gt;" in page.text
    record = await web.get(f"/memory/{evil.id}")
    assert "<script>alert" not in record.text


async def test_a_relative_project_is_a_clear_message(
    web: httpx.AsyncClient, seeded: Seeded
) -> None:
    page = await web.get("/ui/memory/results", params={"q": "calc", "project": "proj-b"})
    assert "the project must be an absolute directory" in page.text


async def test_unknown_record_is_a_404_page(web: httpx.AsyncClient, seeded: Seeded) -> None:
    page = await web.get("/memory/obnope")
    assert page.status_code == 404 and "There is no memory record obnope" in page.text
    gone = await web.post("/ui/memory/obnope/forget", data={"next": "/memory"})
    assert gone.status_code == 404 and "there is no memory record obnope" in gone.text


async def test_forget_from_a_plain_form_redirects_back(
    daemon: RunningDaemon, web: httpx.AsyncClient, seeded: Seeded
) -> None:
    r = await web.post(
        f"/ui/memory/{seeded.calc.id}/forget",
        data={"next": "/memory?q=calc"},
        headers={"Origin": daemon.url},
    )
    assert r.status_code == 303
    assert r.headers["location"] == f"/memory?q=calc&forgotten={seeded.calc.id}"
    assert await daemon.deck._memory.search("calc") == []
    # Only paths on this site: a foreign "next" goes to the memory page.
    r = await web.post(
        f"/ui/memory/{seeded.flaky.id}/forget", data={"next": "https://evil.example/"}
    )
    assert r.headers["location"] == f"/memory?forgotten={seeded.flaky.id}"


async def test_forget_from_another_site_is_refused_and_loses_nothing(
    daemon: RunningDaemon, web: httpx.AsyncClient, seeded: Seeded
) -> None:
    r = await web.post(
        f"/ui/memory/{seeded.calc.id}/forget", headers={"Origin": "https://evil.example"}
    )
    assert r.status_code == 403
    async with daemon.client(token="") as anonymous:
        assert (await anonymous.post(f"/ui/memory/{seeded.calc.id}/forget")).status_code == 401
        assert (await anonymous.get("/memory")).status_code == 401
    assert (await daemon.deck._memory.get(seeded.calc.id)).id == seeded.calc.id
