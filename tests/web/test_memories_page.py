"""The Memories page over plain HTTP with the session cookie: what a browser would
hide (a form post with a bad id or action, the page's empty state), and that a
memory written straight to the store shows escaped, its decision by the web user."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from agentdeck.core.memory_proposals import propose
from agentdeck.store.memory_proposals import ProposalStore

from .conftest import RunningDaemon
from .dashboard_support import logged_in

pytestmark = pytest.mark.anyio


@pytest.fixture
async def web(daemon: RunningDaemon) -> AsyncIterator[httpx.AsyncClient]:
    async with logged_in(daemon) as client:
        yield client


async def test_the_page_escapes_and_the_forms_decide(
    daemon: RunningDaemon, web: httpx.AsyncClient
) -> None:
    empty = await web.get("/memories")
    assert empty.status_code == 200 and "No pending memories." in empty.text
    made = propose(
        agent_id="a1", template="t", project="/p", text="<b id=x>bold</b> & more",
        kind="fact", auto=False,
    )  # fmt: skip
    await ProposalStore(daemon.deck._store).add(made, pending_cap=5)
    page = await web.get("/memories")
    assert "&lt;b id=x&gt;bold&lt;/b&gt; &amp; more" in page.text and "<b id=x>" not in page.text

    headers = {"Origin": daemon.url}
    bad = await web.post(f"/ui/memories/{made.id}/explode", headers=headers)
    assert bad.status_code == 404
    wrong = await web.post("/ui/memories/not-an-id/accept", headers=headers)
    assert wrong.status_code == 400 and "not a memory id" in wrong.text
    empty_text = await web.post(
        f"/ui/memories/{made.id}/edit", data={"text": "  "}, headers=headers
    )
    assert empty_text.status_code == 400 and "empty" in empty_text.text
    done = await web.post(f"/ui/memories/{made.id}/accept", data={"state": "pending"},
                          headers=headers)  # fmt: skip
    assert done.status_code == 303 and done.headers["location"].endswith("done=accepted")
    kept = await daemon.deck.memory_proposal(made.id)
    assert str(kept.state) == "accepted" and (kept.decided_by or "").startswith("user:web")
    again = await web.post(f"/ui/memories/{made.id}/accept", headers=headers)
    assert again.status_code == 409
