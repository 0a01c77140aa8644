"""Server-sent events under /api/events/stream. (Placeholder.)"""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/api", tags=["events"])
