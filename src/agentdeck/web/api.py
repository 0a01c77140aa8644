"""REST API under /api: agents, steering, the event log, totals.

Every action goes through the ``Deck`` on ``app.state.deck``. Errors are raised
as agentdeck errors; ``app.py`` renders them as JSON (404, 409, 422, ...).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, status

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.profile_ref import ACCEPTED, names_a_builtin, project_file
from agentdeck.daemon.deck import Deck
from agentdeck.errors import PolicyError, ScenarioError, UsageError
from agentdeck.web.members import audit_member_act
from agentdeck.web.owners import owned
from agentdeck.web.schemas import (
    MAX_AGENT_PAGE,
    MAX_EVENT_PAGE,
    AgentCreate,
    AgentOut,
    AgentPage,
    ArchiveIn,
    CompactIn,
    EventOut,
    EventPage,
    KillIn,
    MessageIn,
    ResumeIn,
    SpawnIn,
    StatsOut,
    errors,
)

logger = logging.getLogger(__name__)

_ERRORS = errors(
    400, 404, 409, 502,
    e400="Bad usage (e.g. the working directory does not exist)", e404="No such agent",
    e409="The agent's state does not allow this",
)  # fmt: skip

router = APIRouter(prefix="/api", tags=["api"], responses=_ERRORS)

# OpenAPI links: what a client (and a stateful fuzzer) can do next with the agent
# an answer names, by operation id.
AGENT_LINKS = {
    op: {"operationId": op, "parameters": {"ref": "$response.body#/id"}}
    for op in (
        "get_agent_api_agents__ref__get",
        "send_message_api_agents__ref__messages_post",
        "interrupt_api_agents__ref__interrupt_post",
        "kill_api_agents__ref__kill_post",
        "resume_api_agents__ref__resume_post",
        "archive_api_agents__ref__archive_post",
        "spawn_child_api_agents__ref__children_post",
        "agent_checkpoints_api_agents__ref__checkpoints_get",
        "agent_rewind_api_agents__ref__rewind_post",
        "agent_diff_api_agents__ref__diff_get",
        "agent_merge_api_agents__ref__merge_post",
    )
}

AgentRef = Annotated[
    str, Path(description="An agent id, a unique id prefix (4+ characters) or a unique name.")
]


def _deck(request: Request) -> Deck:
    deck: Deck = request.app.state.deck
    return deck


# -- agents ----------------------------------------------------------------------


@router.get("/agents", response_model=AgentPage, summary="List agents, newest first")
async def list_agents(
    request: Request,
    state: Annotated[
        list[AgentState], Query(description="Only these states (repeatable); default: all.")
    ] = [],  # noqa: B006 - FastAPI copies the default
    q: Annotated[str | None, Query(description="Text in name, id, cwd or spec.")] = None,
    archived: Annotated[bool, Query(description="Include archived agents.")] = False,
    parent: Annotated[
        str | None, Query(description="Only this agent's children (id, prefix or name).")
    ] = None,
    roots: Annotated[bool, Query(description="Only agents without a parent.")] = False,
    limit: Annotated[int, Query(ge=1, le=MAX_AGENT_PAGE)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> AgentPage:
    deck = _deck(request)
    parent_id = (await deck.get_agent(parent)).id if parent else None
    # One row more than asked tells whether there is a next page.
    found = await deck.list_agents(
        states=state or None,
        text=q or None,
        include_archived=archived or parent_id is not None,
        limit=limit + 1,
        offset=offset,
        parent=parent_id,
        roots=roots,
    )
    return AgentPage(
        agents=[AgentOut.of(a) for a in found[:limit]],
        limit=limit,
        offset=offset,
        next_offset=offset + limit if len(found) > limit else None,
    )


@router.post(
    "/agents",
    response_model=AgentOut,
    status_code=status.HTTP_201_CREATED,
    summary="Start an agent (the options of `agentdeck run`)",
    responses={201: {"description": "The agent, starting", "links": AGENT_LINKS}},
)
async def create_agent(request: Request, body: AgentCreate) -> AgentOut:
    deck = _deck(request)
    spec = owned(body.to_spec(), request)
    if not _deck_owner(request, deck):
        spec = _confined(spec)
    agent = await deck.create_agent(spec, keep_alive=body.keep_alive, template=body.agent)
    logger.info("agent %s created through the API", agent.id)
    await audit_member_act(request, agent.id, "start", body.model_dump(mode="json"))
    return AgentOut.of(agent)


def _deck_owner(request: Request, deck: Deck) -> bool:
    """Whether the caller holds the token file of the deck's home: the deck's own
    user (the CLI's), who reads whatever the daemon reads anyway."""
    auth = request.headers.get("authorization", "")
    mine = deck.owner_token()
    if not mine or not auth.lower().startswith("bearer "):
        return False
    return secrets.compare_digest(auth[7:].strip().encode(), mine.encode())


def _confined(spec: AgentSpec) -> AgentSpec:
    """``spec`` with its profile and scenario checked: for anyone but the deck's
    owner, a built-in's name or a file in the project's ``.agentdeck/`` (made an
    absolute path), never any other path — the daemon would read it for them and
    its errors would say what it holds (422 otherwise)."""
    project = spec.project or spec.cwd
    profile, scenario = spec.profile, spec.scenario
    if profile is not None:
        profile = _ref(profile, project, Deck.profile_names(), "profile")
    if scenario is not None:
        scenario = _ref(scenario, project, Deck.scenario_names(), "scenario")
    return replace(spec, profile=profile, scenario=scenario)


def _ref(ref: str, project: str | None, builtins: list[str], what: str) -> str:
    fail = PolicyError if what == "profile" else ScenarioError
    if names_a_builtin(ref) and ref in builtins:
        return ref
    if project_file(ref) is None:
        raise fail(ref, f"a {what} given through the API must be {ACCEPTED}; built-in: "
                   f"{', '.join(builtins)}")  # fmt: skip
    try:
        return str(Deck.project_file(ref, project))
    except ValueError as exc:
        raise fail(ref, str(exc)) from None


@router.get(
    "/tree",
    response_model=AgentPage,
    summary="Agents without a parent (newest first, a page of them), each followed by "
    "every agent below it",
)
async def tree(
    request: Request,
    q: Annotated[str | None, Query(description="Text in a root's name, id, cwd or spec.")] = None,
    archived: Annotated[bool, Query(description="Include archived agents.")] = False,
    limit: Annotated[int, Query(ge=1, le=MAX_AGENT_PAGE)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> AgentPage:
    deck = _deck(request)
    roots = await deck.list_agents(
        text=q or None, include_archived=archived, limit=limit + 1, offset=offset, roots=True
    )
    shown = roots[:limit]
    below = await deck.descendants([a.id for a in shown])
    return AgentPage(
        agents=[AgentOut.of(a) for a in [*shown, *below]],
        limit=limit,
        offset=offset,
        next_offset=offset + limit if len(roots) > limit else None,
    )


@router.get("/agents/{ref}", response_model=AgentOut, summary="One agent")
async def get_agent(request: Request, ref: AgentRef) -> AgentOut:
    return AgentOut.of(await _deck(request).get_agent(ref))


@router.post(
    "/agents/{ref}/messages",
    response_model=AgentOut,
    summary="Send a follow-up (a finished agent is resumed with it)",
)
async def send_message(request: Request, ref: AgentRef, body: MessageIn) -> AgentOut:
    agent = await _deck(request).send(ref, body.text)
    await audit_member_act(request, agent.id, "message", {"text": body.text})
    return AgentOut.of(agent)


@router.post(
    "/agents/{ref}/compact",
    response_model=AgentOut,
    summary="Compact an idle agent's context (Claude Code's /compact)",
)
async def compact(request: Request, ref: AgentRef, body: CompactIn | None = None) -> AgentOut:
    body = body or CompactIn()
    agent = await _deck(request).compact(ref, body.instructions)
    await audit_member_act(request, agent.id, "compact", {})
    return AgentOut.of(agent)


@router.post("/agents/{ref}/interrupt", response_model=AgentOut, summary="Stop the current turn")
async def interrupt(request: Request, ref: AgentRef) -> AgentOut:
    agent = await _deck(request).interrupt(ref)
    await audit_member_act(request, agent.id, "interrupt", {})
    return AgentOut.of(agent)


@router.post(
    "/agents/{ref}/kill",
    response_model=AgentOut,
    summary="Stop the agent, every process it started and (by default) every agent it started",
)
async def kill(request: Request, ref: AgentRef, body: KillIn | None = None) -> AgentOut:
    body = body or KillIn()
    agent = await _deck(request).kill(ref, children=body.children)
    await audit_member_act(request, agent.id, "stop", {"children": body.children})
    return AgentOut.of(agent)


@router.post(
    "/agents/{ref}/children",
    response_model=AgentOut,
    status_code=status.HTTP_201_CREATED,
    summary="Start a child agent under the tree's rules (limits, carved budget, profile)",
    responses={201: {"description": "The child, starting", "links": AGENT_LINKS}},
)
async def spawn_child(request: Request, ref: AgentRef, body: SpawnIn) -> AgentOut:
    agent = await _deck(request).spawn(
        ref, body.prompt, template=body.template, name=body.name, workspace=body.workspace
    )
    return AgentOut.of(agent)


@router.post(
    "/agents/{ref}/resume",
    response_model=AgentOut,
    summary="Continue a finished agent's session (or fork it into a new agent)",
)
async def resume(request: Request, ref: AgentRef, body: ResumeIn | None = None) -> AgentOut:
    body = body or ResumeIn()
    agent = await _deck(request).resume(ref, body.text, fork=body.fork)
    await audit_member_act(request, agent.id, "resume", {"text": body.text, "fork": body.fork})
    return AgentOut.of(agent)


@router.post("/agents/{ref}/archive", response_model=AgentOut, summary="Archive or restore")
async def archive(request: Request, ref: AgentRef, body: ArchiveIn | None = None) -> AgentOut:
    body = body or ArchiveIn()
    return AgentOut.of(await _deck(request).archive(ref, body.archived))


# -- events and totals -------------------------------------------------------------


@router.get("/events", response_model=EventPage, summary="The event log, oldest first")
async def events(
    request: Request,
    after: Annotated[int, Query(ge=0, description="Events with a larger id.")] = 0,
    before: Annotated[
        int | None,
        Query(
            ge=1,
            description="Instead of `after`: the newest `limit` events with a smaller id "
            "(still oldest first), to page backwards from the end of a long log.",
        ),
    ] = None,
    agent: Annotated[str | None, Query(description="Only this agent's events.")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_EVENT_PAGE)] = 1000,
) -> EventPage:
    if before is not None and after:
        raise UsageError(
            "give `after` or `before`, not both", hint="`before` pages backwards, `after` forwards"
        )
    deck = _deck(request)
    agent_id = (await deck.get_agent(agent)).id if agent else None
    if before is not None:
        # One more than asked says whether anything older is left.
        older = await deck.events_before(agent_id=agent_id, before=before, limit=limit + 1)
        more, found = len(older) > limit, older[-limit:]
        return EventPage(
            events=[EventOut.of(e) for e in found],
            next_after=found[-1].id if found else before - 1,
            next_before=found[0].id if more and found else None,
        )
    found = await deck.events(after=after, agent_id=agent_id, limit=limit)
    return EventPage(
        events=[EventOut.of(e) for e in found],
        next_after=found[-1].id if found else after,
    )


@router.get("/stats", response_model=StatsOut, summary="Agents by state, cost and token totals")
async def stats(request: Request) -> StatsOut:
    deck = _deck(request)
    return StatsOut.of(
        await deck.stats(), subscribers=deck.followers, refused=deck.refused_transitions
    )
