"""The Memories inbox under /api/memories: what agents proposed with the deck's
``remember`` tool, accepted, edited or rejected by a person
(``core.deck.memories``). A memory's text is the model's: the API returns it as
data, the pages escape it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, Field

from agentdeck.core.memory_proposals import KINDS, LIST_MAX, TEXT_MAX_BYTES
from agentdeck.daemon.deck import Deck
from agentdeck.errors import UsageError
from agentdeck.web.auth import channel_of
from agentdeck.web.schemas import Body, errors

_ERRORS = errors(
    400, 404, 409, e400="Bad usage (a malformed id, an empty or too long text, an unknown kind)",
    e404="No such memory", e409="The memory is no longer in a state that allows it",
)  # fmt: skip

router = APIRouter(prefix="/api/memories", tags=["memories"], responses=_ERRORS)

MemoryId = Annotated[str, Path(description="A proposed memory's id, `mp…`.")]


class MemoryOut(BaseModel):
    id: str
    agent_id: str = Field(description="The agent that proposed it.")
    template: str = Field(description="Its template's name (empty: none).")
    project: str = Field(description="The project's absolute directory.")
    kind: str = Field(description=f"One of {', '.join(KINDS)}.")
    text: str = Field(description="What the agent proposed (scrubbed): data, not an instruction.")
    state: Literal["pending", "accepted", "rejected"]
    created_at: float
    decided_at: float | None
    decided_by: str | None
    edited: bool = Field(description="A person changed its text or kind.")


class MemoryPage(BaseModel):
    memories: list[MemoryOut]


class MemoryEdit(Body):
    text: str | None = Field(
        default=None, description=f"The new text (at most {TEXT_MAX_BYTES} bytes)."
    )
    kind: str | None = Field(default=None, description=f"One of {', '.join(KINDS)}.")


def _only(request: Request, *names: str) -> None:
    """A query parameter the route does not take is refused, not ignored (a typo
    would list the wrong memories without a word)."""
    unknown = sorted(set(request.query_params) - set(names))
    if unknown:
        raise UsageError(
            f"unknown query parameter {unknown[0][:40]!r}",
            hint=f"this route takes {', '.join(names) or 'none'}",
        )


def _deck(request: Request) -> Deck:
    deck: Deck = request.app.state.deck
    return deck


@router.get("", response_model=MemoryPage, summary="Proposed memories, newest first")
async def list_memories(
    request: Request,
    state: Annotated[
        Literal["pending", "accepted", "rejected", "all"], Query(description="Which ones.")
    ] = "pending",
    limit: Annotated[int, Query(ge=1, le=LIST_MAX)] = 100,
) -> dict[str, Any]:
    _only(request, "state", "limit")
    found = await _deck(request).memory_proposals(state, limit=limit)
    return {"memories": [m.to_dict() for m in found]}


@router.get("/{memory_id}", response_model=MemoryOut, summary="One proposed memory")
async def get_memory(request: Request, memory_id: MemoryId) -> dict[str, Any]:
    _only(request)
    return (await _deck(request).memory_proposal(memory_id)).to_dict()


@router.post("/{memory_id}/accept", response_model=MemoryOut, summary="Accept a memory")
async def accept_memory(request: Request, memory_id: MemoryId) -> dict[str, Any]:
    deck = _deck(request)
    return (await deck.accept_memory(memory_id, by=channel_of(request))).to_dict()


@router.post("/{memory_id}/reject", response_model=MemoryOut, summary="Reject or withdraw one")
async def reject_memory(request: Request, memory_id: MemoryId) -> dict[str, Any]:
    deck = _deck(request)
    return (await deck.reject_memory(memory_id, by=channel_of(request))).to_dict()


@router.patch("/{memory_id}", response_model=MemoryOut, summary="Reword a memory")
async def edit_memory(request: Request, memory_id: MemoryId, body: MemoryEdit) -> dict[str, Any]:
    found = await _deck(request).edit_memory(memory_id, text=body.text, kind=body.kind)
    return found.to_dict()
