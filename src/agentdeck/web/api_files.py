"""Files for an agent's workspace under /api (a chat bridge's attachments)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging

from fastapi import APIRouter, Request, status
from pydantic import BaseModel, Field

from agentdeck.daemon.deck import Deck
from agentdeck.errors import UsageError
from agentdeck.web.members import audit_member_act
from agentdeck.web.schemas import Body, errors

logger = logging.getLogger(__name__)

router = APIRouter(prefix="/api", tags=["files"], responses=errors(400, 404))


class UploadIn(Body):
    name: str = Field(min_length=1, max_length=128, description="A plain file name.")
    content_base64: str = Field(description="The file's bytes, base64-encoded.")


class UploadOut(BaseModel):
    path: str = Field(description="Where it was saved, relative to the agent's workspace.")
    size: int


@router.post(
    "/agents/{ref}/files",
    response_model=UploadOut,
    status_code=status.HTTP_201_CREATED,
    summary="Save a file under uploads/ in the agent's workspace (a taken name gets a number)",
)
async def upload(request: Request, ref: str, body: UploadIn) -> UploadOut:
    deck: Deck = request.app.state.deck
    agent = await deck.get_agent(ref)
    try:
        data = base64.b64decode(body.content_base64, validate=True)
    except (binascii.Error, ValueError):
        raise UsageError("content_base64 is not base64") from None
    saved = await deck.upload(agent.id, body.name, data)
    logger.info("saved %s (%d bytes) for agent %s", saved, len(data), agent.id)
    digest = hashlib.sha256(data).hexdigest()
    await audit_member_act(request, agent.id, "upload", {"name": str(saved), "sha256": digest})
    return UploadOut(path=str(saved), size=len(data))
