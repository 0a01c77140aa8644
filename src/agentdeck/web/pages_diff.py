"""The agent page's diff: what an agent in a worktree changed, highlighted on the
server (Pygments), kept current while the agent works."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from agentdeck.core.agent import Agent
from agentdeck.core.patch_scrub import scrub_patch
from agentdeck.core.worktree import Worktree
from agentdeck.daemon.deck import Deck
from agentdeck.errors import WorktreeError
from agentdeck.web.pages_base import agent_partial, render_text

router = APIRouter()

PAGE_PATCH_CHARS = 200_000  # past this the page shows the file list and points to the CLI
FORMATTER = HtmlFormatter(noclasses=True, nowrap=True, style="default")


def highlighted(patch: str) -> tuple[Markup, bool]:
    """A patch scrubbed of secrets (the page is a viewer like the event log) and
    highlighted; whether it was cut at PAGE_PATCH_CHARS."""
    clean = scrub_patch(patch)
    cut = len(clean) > PAGE_PATCH_CHARS
    return Markup(highlight(clean[:PAGE_PATCH_CHARS], DiffLexer(), FORMATTER)), cut


async def highlighted_in_thread(patch: str) -> tuple[Markup, bool]:
    """``highlighted`` in a worker thread: scrubbing and highlighting 200 KB takes
    Pygments long enough to hold every other request and stream of the daemon."""
    return await asyncio.to_thread(highlighted, patch)


async def diff_html(deck: Deck, agent: Agent) -> str:
    """The panel, or nothing for an agent without a worktree."""
    worktree = Worktree.from_extra(agent.extra)
    if worktree is None:
        return ""
    try:
        changes = await deck.diff(agent.id)
    except WorktreeError as exc:
        return render_text("_agent_diff.html", agent=agent, worktree=worktree, error=str(exc))
    patch, cut = await highlighted_in_thread(changes.patch)
    return render_text(
        "_agent_diff.html",
        agent=agent,
        worktree=worktree,
        files=changes.files,
        added=sum(f.added or 0 for f in changes.files),
        removed=sum(f.removed or 0 for f in changes.files),
        patch=patch,
        cut=cut,
        poll=agent.state.is_live,
        error=None,
    )


@router.get("/ui/agents/{agent_id}/diff", response_class=HTMLResponse)
async def diff_panel(request: Request, agent_id: str) -> HTMLResponse:
    return await agent_partial(request, agent_id, diff_html)
