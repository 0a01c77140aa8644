"""Memory under /api/memory: search, read and forget what sessions left behind.

The same records as ``agentdeck memory`` and the MCP server's tools. Projects
are absolute directories; a relative one is refused (the daemon's working
directory means nothing to the caller).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from agentdeck.daemon.deck import Deck
from agentdeck.errors import UsageError
from agentdeck.web.schemas import errors
from agentdeck.web.schemas_memory import (
    MAX_SEARCH_LIMIT,
    ForgetOut,
    HitPage,
    MemoryStatsOut,
    ObservationOut,
    SummaryOut,
    record_to_dict,
)

_ERRORS = errors(
    400, 404, e400="Bad usage (e.g. two selectors, a relative project)",
    e404="No such memory record",
)  # fmt: skip

router = APIRouter(prefix="/api/memory", tags=["memory"], responses=_ERRORS)

MemoryId = Annotated[str, Path(description="A record id: `ob…` (observation) or `su…` (summary).")]
ProjectQuery = Annotated[
    str | None, Query(description="Only this project (its absolute directory).")
]


def _deck(request: Request) -> Deck:
    deck: Deck = request.app.state.deck
    return deck


@router.get("/search", response_model=HitPage, summary="Full-text search, best first")
async def search(
    request: Request,
    q: Annotated[str, Query(description="Any text; an empty query finds nothing.")],
    project: ProjectQuery = None,
    limit: Annotated[int, Query(ge=1, le=MAX_SEARCH_LIMIT)] = 10,
) -> dict[str, Any]:
    hits = await _deck(request).memory_search(q, project=project, limit=limit)
    return {"hits": [h.to_dict() for h in hits]}


@router.get("/stats", response_model=MemoryStatsOut, summary="How much memory is kept")
async def stats(request: Request) -> dict[str, int]:
    return await _deck(request).memory_stats()


@router.get("/{memory_id}", response_model=ObservationOut | SummaryOut, summary="One whole record")
async def get_record(request: Request, memory_id: MemoryId) -> dict[str, Any]:
    return record_to_dict(await _deck(request).memory_record(memory_id))


@router.delete("/{memory_id}", response_model=ForgetOut, summary="Forget one record")
async def forget_record(request: Request, memory_id: MemoryId) -> dict[str, int]:
    return {"forgotten": await _deck(request).forget_memory(memory_id=memory_id)}


@router.delete("", response_model=ForgetOut, summary="Forget a session's or a project's records")
async def forget_many(
    request: Request,
    session: Annotated[str | None, Query(description="Every record of this session.")] = None,
    project: ProjectQuery = None,
) -> dict[str, int]:
    session, project = (session or "").strip() or None, project or None
    if (session is None) == (project is None):
        raise UsageError(
            "give exactly one of session=… or project=…",
            hint="DELETE /api/memory/{id} forgets one record",
        )
    forgotten = await _deck(request).forget_memory(session_id=session, project=project)
    return {"forgotten": forgotten}
