"""Memory's wire format: the bodies of /api/memory (pydantic; they make /openapi.json)
and the conversions between them and the domain's records.

The API, the CLI's ``--json`` and the CLI's daemon client all describe a record
the same way (``core.knowledge.record_to_dict``): the dataclass's fields plus
``kind``; tuples become lists.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agentdeck.core.knowledge import (
    MAX_SEARCH_LIMIT,
    MemoryRecord,
    record_from_dict,
    record_to_dict,
)
from agentdeck.core.memory import MemoryKind

__all__ = [
    "MAX_SEARCH_LIMIT", "ForgetOut", "HitOut", "HitPage", "MemoryRecord", "MemoryStatsOut",
    "ObservationOut", "SummaryOut", "record_from_dict", "record_to_dict",
]  # fmt: skip


class ObservationOut(BaseModel):
    kind: Literal["observation"] = "observation"
    id: str
    project: str = Field(description="The project's absolute directory.")
    session_id: str = Field(description="Claude Code's session id.")
    agent_id: str | None
    ts: float
    tool: str
    input_summary: str = Field(description="The call in one line, e.g. `Bash(pytest -x)`.")
    output_excerpt: str
    files: list[str]
    is_error: bool


class SummaryOut(BaseModel):
    kind: Literal["summary"] = "summary"
    id: str
    project: str = Field(description="The project's absolute directory.")
    session_id: str = Field(description="Claude Code's session id.")
    agent_id: str | None
    ts: float
    files_changed: list[str]
    commands: list[str]
    errors: list[str]
    final_message: str
    request: str
    model_summary: str | None


class HitOut(BaseModel):
    id: str
    kind: MemoryKind
    project: str
    session_id: str
    ts: float
    title: str
    snippet: str = Field(description="The matched text, terms marked `[...]`.")
    score: float = Field(description="Higher is better.")


class HitPage(BaseModel):
    hits: list[HitOut]


class ForgetOut(BaseModel):
    forgotten: int = Field(description="How many records were deleted.")


class MemoryStatsOut(BaseModel):
    observations: int
    summaries: int
    projects: int
