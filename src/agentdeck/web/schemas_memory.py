"""Memory's wire format: the bodies of /api/memory (pydantic; they make /openapi.json)
and the conversions between them and the domain's records.

The API, the CLI's ``--json`` and the CLI's daemon client all describe a record
the same way: the dataclass's fields plus ``kind``; tuples become lists.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentdeck.core.memory import MemoryKind, Observation, SessionSummary

MAX_SEARCH_LIMIT = 100

MemoryRecord = Observation | SessionSummary


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


def record_to_dict(record: MemoryRecord) -> dict[str, Any]:
    kind = MemoryKind.OBSERVATION if isinstance(record, Observation) else MemoryKind.SUMMARY
    out: dict[str, Any] = {"kind": str(kind)}
    for field in dataclasses.fields(record):
        value = getattr(record, field.name)
        out[field.name] = list(value) if isinstance(value, tuple) else value
    return out


def record_from_dict(data: dict[str, Any]) -> MemoryRecord:
    fields: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k != "kind"
    }
    if data.get("kind") == MemoryKind.SUMMARY:
        return SessionSummary(**fields)
    return Observation(**fields)
