"""Helpers for the dashboard tests, on top of the ``daemon`` fixture
(``tests/web/conftest.py``: a real Deck behind a real uvicorn server).

    async with logged_in(daemon) as web:          # cookie login, as a browser does
        page = await web.get("/")
    async with chromium() as browser: ...          # Debian's Chromium, headless
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import httpx

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


class DaemonLike(Protocol):
    url: str
    token: str


def login_url(daemon: DaemonLike) -> str:
    return f"{daemon.url}/login?token={daemon.token}"


@contextlib.asynccontextmanager
async def logged_in(daemon: DaemonLike) -> AsyncIterator[httpx.AsyncClient]:
    """A client holding the session cookie that opening the login URL sets."""
    async with httpx.AsyncClient(base_url=daemon.url, timeout=30.0) as client:
        response = await client.get(login_url(daemon))
        assert response.status_code == 303, response.text
        assert response.headers["location"] == "/"
        yield client


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


def rows_in(html: str) -> list[str]:
    """The agent ids of the board rows in a page."""
    return re.findall(r'class="row agent-row [^"]*" id="agent-([^"]+)"', html)


def items_in(html: str) -> list[int]:
    """The event ids of the transcript entries in a page or fragment."""
    return [int(x) for x in re.findall(r'<li class="item [^"]*" id="ev-(\d+)"', html)]


@contextlib.asynccontextmanager
async def browser_tab(daemon: DaemonLike) -> AsyncIterator[Page]:
    """A browser tab logged in through the login URL, on the board; it fails the
    test on any JavaScript error the page raised."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    async with chromium() as browser:
        context = await browser.new_context(viewport={"width": 1400, "height": 900})
        tab = await context.new_page()
        errors: list[str] = []
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        await tab.goto(login_url(daemon))
        from playwright.async_api import expect

        await expect(tab).to_have_url(daemon.url + "/")
        yield tab
        await context.close()
        assert errors == [], f"JavaScript errors on the page: {errors}"


async def snap(page: Page, name: str) -> None:
    """A full-page screenshot from the top (sticky bars stay where a person sees them)."""
    await page.evaluate("window.scrollTo(0, 0)")
    await page.screenshot(path=SCREENSHOTS / name, full_page=True)
