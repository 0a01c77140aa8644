"""What the dashboard's forms and buttons do: start an agent, send a follow-up,
interrupt, kill, resume, compact — each through the Deck.

htmx requests get an HTML fragment back (the agent header, or an error
message) and a redirect in ``HX-Redirect``; plain form posts (no JavaScript)
get a 303 to the page to show next.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from agentdeck.core.agent import Agent, AgentSpec
from agentdeck.daemon.deck import Deck
from agentdeck.errors import AgentdeckError
from agentdeck.web.auth import actor_label
from agentdeck.web.members import audit_member_act
from agentdeck.web.owners import owned
from agentdeck.web.pages_base import deck_of, form_error, is_htmx, render_text

logger = logging.getLogger(__name__)

router = APIRouter(include_in_schema=False)

MAX_FORM_BYTES = 256 * 1024
ACTIONS = ("send", "interrupt", "kill", "resume", "compact")


async def form_of(request: Request) -> dict[str, str]:
    """An urlencoded form body (no multipart dependency for four text fields)."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return {}
    parsed = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {k: v[-1] for k, v in parsed.items()}


def spec_from_form(form: dict[str, str]) -> AgentSpec:
    """The form's fields as a spec; raises ``ValueError`` with a message for people."""
    prompt = form.get("prompt", "").strip()
    if not prompt:
        raise ValueError("write a prompt for the agent")
    scenario = form.get("scenario", "").strip() or None
    if scenario is not None and scenario not in Deck.scenario_names():
        raise ValueError(f"unknown scenario {scenario!r}")
    allow = tuple(
        line.strip()
        for line in form.get("allow", "").replace(",", "\n").splitlines()
        if line.strip()
    )
    workspace = form.get("workspace", "").strip() or None
    if workspace not in (None, "worktree"):
        raise ValueError(f"unknown workspace {workspace!r}")
    cwd = form.get("cwd", "").strip() or None
    if workspace == "worktree" and cwd is None:
        raise ValueError("a worktree is made from a repository: give its working directory")
    return AgentSpec(
        prompt=prompt,
        name=form.get("name", "").strip() or None,
        allow=allow,
        scenario=scenario,
        cwd=cwd,
        workspace=workspace,
        base=(form.get("base", "").strip() or None) if workspace else None,
    )


def redirect(request: Request, url: str) -> Response:
    """After a form: htmx is told where to go (``HX-Redirect``), a plain post gets a 303."""
    if is_htmx(request):
        return Response(status_code=204, headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)


@router.post("/ui/agents")
async def start_agent(request: Request) -> Response:
    form = await form_of(request)
    try:
        spec = owned(spec_from_form(form), request)
        template = form.get("agent", "").strip() or None
        agent = await deck_of(request).create_agent(spec, template=template)
        await audit_member_act(
            request, agent.id, "start", {"prompt": spec.prompt}, by=actor_label(request, "web")
        )
    except ValueError as exc:
        return form_error(request, str(exc), htmx_status=200)
    except AgentdeckError as exc:
        return form_error(request, exc.message, htmx_status=200)
    return redirect(request, f"/agents/{agent.id}")


async def _act(deck: Deck, agent_id: str, action: str, form: dict[str, str]) -> Agent:
    text = form.get("text", "").strip()
    if action == "send":
        if not text:
            raise ValueError("write a message to send")
        return await deck.send(agent_id, text)
    if action == "interrupt":
        return await deck.interrupt(agent_id)
    if action == "kill":
        return await deck.kill(agent_id)
    if action == "compact":  # an idle agent only (InvalidState); the text: what to keep
        return await deck.compact(agent_id, text or None)
    return await deck.resume(agent_id, text or None)


@router.post("/ui/agents/{agent_id}/{action}")
async def agent_action(request: Request, agent_id: str, action: str) -> Response:
    if action not in ACTIONS:
        return HTMLResponse("unknown action", status_code=404)
    deck = deck_of(request)
    form = await form_of(request)
    flash: dict[str, Any] | None = None
    try:
        agent = await _act(deck, agent_id, action, form)
        detail = {"text": form["text"]} if form.get("text") else {}
        await audit_member_act(request, agent.id, action, detail, by=actor_label(request, "web"))
        flash = {"ok": True, "message": _DONE[action]}
    except (ValueError, AgentdeckError) as exc:
        message = exc.message if isinstance(exc, AgentdeckError) else str(exc)
        logger.info("dashboard %s on %s refused: %s", action, agent_id, message)
        flash = {"ok": False, "message": f"could not {action}: {message}"}
        try:
            agent = await deck.get_agent(agent_id)
        except AgentdeckError:
            return form_error(request, message, htmx_status=200)
    if not is_htmx(request):
        return RedirectResponse(f"/agents/{agent.id}", status_code=303)
    header = render_text("_agent_header.html", agent=agent)
    return HTMLResponse(header + render_text("_flash.html", flash=flash, oob=True))


_DONE = {
    "send": "message sent",
    "interrupt": "interrupted",
    "kill": "killed",
    "resume": "resumed",
    "compact": "compaction asked for: its log shows it when Claude Code is done",
}
