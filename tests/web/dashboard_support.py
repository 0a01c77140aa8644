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
    from playwright.async_api import Browser

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
