"""Request and response bodies of the REST API (pydantic; they make /openapi.json).

Responses mirror the domain's own ``to_dict()`` shapes, so the API, ``--json``
output and SSE payloads describe an agent or an event the same way.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import StoredEvent
from agentdeck.daemon.deck import StoreStats

MAX_AGENT_PAGE = 10_000
MAX_EVENT_PAGE = 5000


class Body(BaseModel):
    """Request bodies refuse unknown fields, so a typo is a 422, not a silent no-op;
    take each value as the type it is (no ``0`` for ``false``); and refuse text with
    a NUL character, which no command line, file name or environment variable can
    carry to Claude Code."""

    # strict: a 0 is not a false, a "3" is not a 3; what is typed is what is meant.
    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="after")
    def _no_nul(self) -> Self:
        def check(value: object, where: str) -> None:
            if isinstance(value, str) and "\x00" in value:
                raise ValueError(f"{where} must not contain a NUL character")
            if isinstance(value, dict):
                for k, v in value.items():
                    check(k, where)
                    check(v, f"{where}.{k}")
            elif isinstance(value, list | tuple):
                for i, v in enumerate(value):
                    check(v, f"{where}[{i}]")

        for name in type(self).model_fields:
            check(getattr(self, name), name)
        return self


class AgentCreate(Body):
    """The options of ``agentdeck run``."""

    prompt: str = Field(min_length=1, description="The first user message.")
    name: str | None = Field(
        default=None, min_length=1, description="Display name; default from prompt."
    )
    cwd: str | None = Field(
        default=None, description="Working directory (must exist); default: a fresh workspace."
    )
    model: str | None = Field(default=None, description="Model name passed to Claude Code.")
    allow: list[str] = Field(default_factory=list, description="Allow rules, Claude Code syntax.")
    deny: list[str] = Field(default_factory=list, description="Deny rules, Claude Code syntax.")
    append_system_prompt: str | None = Field(
        default=None, description="Appended to the system prompt."
    )
    max_turns: int | None = Field(default=None, ge=1, description="Most model turns per run.")
    budget_usd: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, description="Spending cap in USD (more than 0)."
    )
    scenario: str | None = Field(
        default=None,
        description="Scripted-model scenario: a built-in name or `.agentdeck/NAME.yaml` in the "
        "project (any file path only with the token of the deck's home, as the CLI sends it).",
    )
    resume_on_restart: bool = Field(
        default=False,
        description="A restarted daemon resumes this agent instead of interrupting it.",
    )
    profile: str | None = Field(
        default=None,
        description="Policy profile: a shipped name or `.agentdeck/NAME.yaml` in the project "
        "(any file path only with the token of the deck's home, as the CLI sends it); "
        "default: the daemon's.",
    )
    keep_alive: bool = Field(
        default=True,
        description="Stay idle after each turn, taking follow-ups (false: one-shot, like `run`).",
    )
    agent: str | None = Field(
        default=None,
        min_length=1,
        description="An agent template (`.claude/agents/NAME.md` of the project or the user, "
        "or a built-in one): its prompt, tools, model, profile and budget; fields given here "
        "win over the template's.",
    )
    project: str | None = Field(
        default=None,
        description="The directory whose `.claude/agents/` templates are searched (default: cwd).",
    )
    workspace: Literal["new", "shared", "worktree"] | None = Field(
        default=None,
        description="worktree: a git worktree of the repository `cwd` is in, on a new branch "
        "agentdeck/<id>/<name> (see /api/agents/{id}/diff); default: `cwd` itself, or a fresh "
        "workspace.",
    )
    base: str | None = Field(
        default=None,
        min_length=1,
        description="With workspace worktree: the ref to start from (default: the current branch).",
    )
    labels: list[str] = Field(
        default_factory=list,
        max_length=32,
        description="On a deck with runner hosts: only a host carrying every one of these "
        "labels runs the agent (`agentdeck runner --label`).",
    )
    output_schema: dict[str, Any] | str | None = Field(
        default=None,
        description="The JSON Schema (an object; `$ref` only inside it) the agent's final "
        "result must match, or `status` (COMPLETE / PARTIAL / FAILED + summary); it wins "
        "over a template's.",
    )
    record: bool = Field(
        default=False,
        description="Record its model traffic (scrubbed) through the recording proxy into a "
        "cassette under the deck's recordings/, whatever AGENTDECK_RECORD says.",
    )
    auto_compact_at: StrictInt | StrictFloat | None = Field(
        default=None,
        description="Tokens (1,000 to 2,000,000), or a share of the model's context window "
        "(0 < x < 1, e.g. 0.8): once a turn's context passes it, the idle agent is compacted "
        "(Claude Code's /compact) before its next turn; it wins over a template's.",
    )

    @field_validator("output_schema")
    @classmethod
    def _schema(cls, value: dict[str, Any] | str | None) -> dict[str, Any] | None:
        from agentdeck.core.output_schema import resolve_schema
        from agentdeck.errors import UsageError

        if value is None:
            return None
        try:
            return resolve_schema(value)
        except UsageError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("prompt")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[str]) -> list[str]:
        from agentdeck.core.hosts import check_label
        from agentdeck.errors import UsageError

        try:
            return [check_label(label) for label in value]
        except UsageError as exc:
            raise ValueError(exc.message) from None

    def to_spec(self) -> AgentSpec:
        return AgentSpec(
            prompt=self.prompt,
            name=self.name,
            cwd=self.cwd,
            model=self.model,
            allow=tuple(self.allow),
            deny=tuple(self.deny),
            append_system_prompt=self.append_system_prompt,
            max_turns=self.max_turns,
            budget_usd=self.budget_usd,
            scenario=self.scenario,
            resume_on_restart=self.resume_on_restart,
            profile=self.profile,
            project=self.project or self.cwd,
            workspace=self.workspace,
            base=self.base,
            output_schema=self.output_schema if isinstance(self.output_schema, dict) else None,
            labels=tuple(self.labels),
            record=self.record,
            auto_compact_at=self.auto_compact_at,
        )


class SpawnIn(Body):
    """A child agent under the tree's rules: limits, carved budget, the parent's profile."""

    prompt: str = Field(min_length=1, description="The child's task.")
    template: str = Field(default="engineer", min_length=1, description="Its agent template.")
    name: str | None = Field(default=None, min_length=1, description="Unique among siblings.")
    workspace: str | None = Field(
        default=None, description="new (default), shared (the parent's cwd) or worktree."
    )


class KillIn(Body):
    children: bool = Field(
        default=True, description="Kill every agent it started too (false: leave them running)."
    )


class MessageIn(Body):
    text: str = Field(min_length=1, description="The follow-up user message.")


class CompactIn(Body):
    instructions: str | None = Field(
        default=None, max_length=2000, description="What the summary should keep (one line)."
    )


class ResumeIn(Body):
    text: str | None = Field(default=None, min_length=1, description="Default: ask it to continue.")
    fork: bool = Field(default=False, description="Branch into a new agent instead.")


class ArchiveIn(Body):
    archived: bool = Field(default=True, description="false restores it from the archive.")


class SpecOut(BaseModel):
    prompt: str
    name: str | None
    cwd: str | None
    model: str | None
    allow: list[str]
    deny: list[str]
    append_system_prompt: str | None
    max_turns: int | None
    budget_usd: float | None
    scenario: str | None
    resume_on_restart: bool
    profile: str | None = None
    template: str | None = None
    tools: list[str] = Field(default_factory=list)
    orchestrator: bool = False
    workspace: str | None = None
    project: str | None = None
    base: str | None = None
    owner: str | None = Field(default=None, description="Who started it (usage and budgets).")
    output_schema: dict[str, Any] | None = Field(
        default=None, description="The JSON Schema its final result must match, if any."
    )
    record: bool = Field(
        default=False, description="Its model traffic is recorded into a cassette."
    )
    auto_compact_at: int | float | None = Field(
        default=None,
        description="Tokens of context (or a share of the context window) past which it is "
        "compacted between turns.",
    )


class AgentOut(BaseModel):
    """``Agent.to_dict()``."""

    id: str
    name: str
    state: AgentState
    source: str
    cwd: str
    session_id: str | None
    cost_usd: float
    input_tokens: int
    output_tokens: int
    turns: int
    current_tool: str | None
    last_error: str | None
    pid: int | None
    owner_pid: int | None
    parent_id: str | None = None
    created_at: float
    updated_at: float
    spec: SpecOut
    extra: dict[str, Any]
    skills: list[str] = Field(
        default_factory=list,
        description="The skills Claude Code offered it at its last start (names only).",
    )

    @classmethod
    def of(cls, agent: Agent) -> AgentOut:
        return cls.model_validate(agent.to_dict())


class AgentPage(BaseModel):
    agents: list[AgentOut]
    limit: int
    offset: int
    next_offset: int | None = Field(description="Offset of the next page; null on the last page.")


class EventOut(BaseModel):
    """``StoredEvent.to_dict()`` — also the ``data:`` of each SSE message."""

    id: int
    agent_id: str
    type: str
    ts: float
    data: dict[str, Any]

    @classmethod
    def of(cls, event: StoredEvent) -> EventOut:
        return cls.model_validate(event.to_dict())


class EventPage(BaseModel):
    events: list[EventOut]
    next_after: int = Field(
        description="Pass as ?after= for the next page: the last id here, or the given "
        "`after` when there was nothing new."
    )
    next_before: int | None = Field(
        default=None,
        description="With `before`: pass as ?before= for the next older page; null when "
        "no older event is left (always null without `before`).",
    )


class StatsOut(BaseModel):
    agents: int = Field(description="Every agent, archived or not.")
    agents_by_state: dict[str, int] = Field(description="Non-archived agents per state.")
    archived: int
    cost_usd: float
    input_tokens: int
    output_tokens: int
    turns: int
    last_event_id: int
    pending_commands: int
    subscribers: int = Field(description="Live event subscribers (SSE streams and others).")
    refused_transitions: dict[str, int] = Field(
        default_factory=dict,
        description="Illegal agent state changes the daemon refused (never written), by "
        "'old -> new': any is a bug to report.",
    )

    @classmethod
    def of(
        cls, stats: StoreStats, *, subscribers: int, refused: dict[str, int] | None = None
    ) -> StatsOut:
        return cls(
            agents=stats.agents,
            agents_by_state=dict(stats.agents_by_state),
            archived=stats.archived,
            cost_usd=stats.cost_usd,
            input_tokens=stats.input_tokens,
            output_tokens=stats.output_tokens,
            turns=stats.turns,
            last_event_id=stats.last_event_id,
            pending_commands=stats.pending_commands,
            subscribers=subscribers,
            refused_transitions=refused or {},
        )


class ErrorDetail(BaseModel):
    status: int
    message: str = Field(description="What happened, and where it helps, what to do next.")
    hint: str | None = None
    type: str | None = None
    kind: str | None = Field(default=None, description="For 404: what was not found.")
    id: str | None = Field(default=None, description="For 404: the id it was asked by.")
    problems: list[dict[str, str]] | None = Field(
        default=None, description="For 422: each invalid field and what is wrong with it."
    )


class ErrorOut(BaseModel):
    error: ErrorDetail


def errors(*codes: int, **texts: str) -> dict[int | str, dict[str, object]]:
    """OpenAPI ``responses`` for error codes, each with the error shape; ``texts`` (as
    ``e404="..."``) says what a code means for this router."""
    return {
        code: {"model": ErrorOut, "description": texts.get(f"e{code}", ERROR_MEANINGS[code])}
        for code in codes
    }


ERROR_MEANINGS = {
    400: "Bad usage: what is wrong and what to do",
    401: "No token, or a wrong one",
    403: "Refused: a cross-origin request, a role short of what the call needs, or the policy",
    404: "Nothing with that id",
    409: "The state of what it acts on does not allow this now",
    421: "An unknown Host header",
    422: "Invalid request: each field and its problem",
    500: "The daemon failed: the message says how",
    502: "Claude Code failed to start or answer: the message says why",
    503: "The daemon is stopping: it starts no agent now",
    507: "The disk holding the deck's database is full: nothing was written; free space",
}
# What any /api call can answer, whatever it does: the security middleware's refusals
# and a failure of the daemon itself.
COMMON_ERRORS = errors(401, 403, 421, 422, 500, 503, 507)
