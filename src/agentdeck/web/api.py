"""REST API under /api. (Placeholder: routes arrive with the API work.)"""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/api", tags=["api"])
