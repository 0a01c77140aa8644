"""Agents and their lifecycle.

``starting → running ⇄ awaiting_permission / awaiting_input / awaiting_agents →
idle (turn done, can take a follow-up) → done | error | interrupted | killed``. A
finished agent with a Claude session id can be resumed, which moves it back to
``starting``. ``awaiting_input`` is a worker waiting for an answer to its question;
``awaiting_agents`` an orchestrator waiting for its children (``wait_for_agents``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from agentdeck.core.agent_file import AgentFile
from agentdeck.core.endpoints import ModelEndpoint
from agentdeck.errors import NotFound, OutOfRange, UsageError

MIN_PREFIX = 4  # characters of an id that may name an agent
MAX_REF = 1_000  # characters of an id, prefix or name: longer is no agent's (nor SQLite's LIKE)


class AgentState(StrEnum):
    # Waiting for a runner host that fits to claim it (a deck on PostgreSQL with
    # runner hosts): neither live (no process yet) nor final; busy (a turn to come).
    QUEUED = "queued"
    STARTING = "starting"
    RUNNING = "running"
    AWAITING_PERMISSION = "awaiting_permission"
    AWAITING_INPUT = "awaiting_input"
    AWAITING_AGENTS = "awaiting_agents"
    IDLE = "idle"
    DONE = "done"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    KILLED = "killed"

    @property
    def is_live(self) -> bool:
        """A process is (or should be) attached to the agent."""
        return self in LIVE_STATES

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATES

    @property
    def is_busy(self) -> bool:
        """In the middle of a turn (or about to start one)."""
        return self in BUSY_STATES


LIVE_STATES = frozenset(
    {
        AgentState.STARTING,
        AgentState.RUNNING,
        AgentState.AWAITING_PERMISSION,
        AgentState.AWAITING_INPUT,
        AgentState.AWAITING_AGENTS,
        AgentState.IDLE,
    }
)
FINAL_STATES = frozenset(
    {AgentState.DONE, AgentState.ERROR, AgentState.INTERRUPTED, AgentState.KILLED}
)

BUSY_STATES = frozenset(
    {
        AgentState.QUEUED,  # about to start its first turn (or to carry one on)
        AgentState.STARTING,
        AgentState.RUNNING,
        AgentState.AWAITING_PERMISSION,
        AgentState.AWAITING_INPUT,
        AgentState.AWAITING_AGENTS,
    }
)
_WAITING = (AgentState.AWAITING_PERMISSION, AgentState.AWAITING_INPUT, AgentState.AWAITING_AGENTS)
_TRANSITIONS: dict[AgentState, frozenset[AgentState]] = {
    # Claimed by a host (starting), or ended before any host took it.
    AgentState.QUEUED: frozenset(
        {AgentState.STARTING, AgentState.INTERRUPTED, AgentState.KILLED, AgentState.ERROR}
    ),
    AgentState.STARTING: frozenset({AgentState.RUNNING, AgentState.IDLE, *FINAL_STATES}),
    AgentState.RUNNING: frozenset({*_WAITING, AgentState.IDLE, *FINAL_STATES}),
    # A waiting agent may wait on something else next (a worker's tool call that
    # needs approval while it waits for an answer, say) before it runs again.
    AgentState.AWAITING_PERMISSION: frozenset(
        {*_WAITING, AgentState.RUNNING, AgentState.IDLE, *FINAL_STATES}
    ),
    AgentState.AWAITING_INPUT: frozenset(
        {*_WAITING, AgentState.RUNNING, AgentState.IDLE, *FINAL_STATES}
    ),
    AgentState.AWAITING_AGENTS: frozenset(
        {*_WAITING, AgentState.RUNNING, AgentState.IDLE, *FINAL_STATES}
    ),
    AgentState.IDLE: frozenset({AgentState.RUNNING, *FINAL_STATES}),
    # A finished agent comes back through resume only: started again here, or
    # queued for a runner host to resume it (its host was lost, say).
    AgentState.DONE: frozenset({AgentState.STARTING, AgentState.QUEUED}),
    AgentState.ERROR: frozenset({AgentState.STARTING, AgentState.QUEUED}),
    AgentState.INTERRUPTED: frozenset({AgentState.STARTING, AgentState.QUEUED}),
    AgentState.KILLED: frozenset({AgentState.STARTING, AgentState.QUEUED}),
}


def can_transition(old: AgentState, new: AgentState) -> bool:
    return old == new or new in _TRANSITIONS[old]


class AgentSource(StrEnum):
    AGENTDECK = "agentdeck"  # started and supervised by agentdeck
    EXTERNAL = "external"  # a hand-started Claude Code session reporting through hooks


@dataclass(frozen=True)
class AgentSpec:
    """What to run: everything ``agentdeck run`` accepts."""

    prompt: str
    name: str | None = None
    cwd: str | None = None
    model: str | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    append_system_prompt: str | None = None
    max_turns: int | None = None
    budget_usd: float | None = None
    scenario: str | None = None  # path of a scripted-model scenario, if any
    resume_on_restart: bool = False  # a restarted daemon resumes it instead of interrupting
    profile: str | None = None  # policy profile; None: the settings' default
    # From an agent template (``.claude/agents/*.md``), resolved when it starts:
    template: str | None = None  # the template's name
    tools: tuple[str, ...] = ()  # the only tools it has; empty: all of them
    orchestrator: bool = False  # it gets the deck's orchestrator tools
    workspace: str | None = None  # new | shared | worktree (None: new, or ``cwd``)
    project: str | None = None  # where its (and its children's) templates come from
    base: str | None = None  # a worktree's starting point (None: the current branch)
    # Who started it (the API's authenticated user; ``local`` for the embedded
    # CLI); an orchestrator's children inherit it. Budgets and usage count by it.
    owner: str | None = None
    # Its template's other Claude Code keys (permissionMode, effort, hooks, skills, …)
    claude: AgentFile = field(default_factory=AgentFile)
    # The JSON Schema its final result must match (core.output_schema), if any.
    output_schema: dict[str, Any] | None = None
    # Its template's model endpoint (a name in endpoints.yaml, or inline): core.endpoints
    model_endpoint: ModelEndpoint | None = None
    thinking: dict[str, Any] | None = None  # its template's (core.thinking), as the SDK's
    # On a deck with runner hosts: only a host carrying every one of these labels
    # claims it (``agentdeck runner --label``).
    labels: tuple[str, ...] = ()
    # Its model traffic goes through the recording proxy into a cassette
    # (``agentdeck run --record``, the API's ``record``): runner.recording.
    record: bool = False
    # Compacted between turns once its context passes this many tokens, or this
    # share (0 < x < 1) of its model's context window (a template's
    # ``auto_compact_at``): core.compaction.AutoCompaction.
    auto_compact_at: int | float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "name": self.name,
            "cwd": self.cwd,
            "model": self.model,
            "allow": list(self.allow),
            "deny": list(self.deny),
            "append_system_prompt": self.append_system_prompt,
            "max_turns": self.max_turns,
            "budget_usd": self.budget_usd,
            "scenario": self.scenario,
            "resume_on_restart": self.resume_on_restart,
            "profile": self.profile,
            "template": self.template,
            "tools": list(self.tools),
            "orchestrator": self.orchestrator,
            "workspace": self.workspace,
            "project": self.project,
            "base": self.base,
            "owner": self.owner,
            **({"claude": self.claude.to_dict()} if self.claude else {}),
            "output_schema": self.output_schema,
            **({"model_endpoint": self.model_endpoint.to_dict()} if self.model_endpoint else {}),
            **({"thinking": self.thinking} if self.thinking else {}),
            **({"labels": list(self.labels)} if self.labels else {}),
            "record": self.record,
            "auto_compact_at": self.auto_compact_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentSpec:
        return cls(
            prompt=str(data.get("prompt", "")),
            name=data.get("name"),
            cwd=data.get("cwd"),
            model=data.get("model"),
            allow=tuple(data.get("allow") or ()),
            deny=tuple(data.get("deny") or ()),
            append_system_prompt=data.get("append_system_prompt"),
            max_turns=data.get("max_turns"),
            budget_usd=data.get("budget_usd"),
            scenario=data.get("scenario"),
            resume_on_restart=bool(data.get("resume_on_restart", False)),
            profile=data.get("profile"),
            template=data.get("template"),
            tools=tuple(data.get("tools") or ()),
            orchestrator=bool(data.get("orchestrator", False)),
            workspace=data.get("workspace"),
            project=data.get("project"),
            base=data.get("base"),
            owner=data.get("owner"),
            claude=AgentFile.from_dict(data.get("claude")),
            output_schema=data.get("output_schema") or None,
            model_endpoint=ModelEndpoint.from_dict(data.get("model_endpoint")),
            thinking=data.get("thinking") or None,
            labels=tuple(str(x) for x in data.get("labels") or ()),
            record=data.get("record") is True,
            auto_compact_at=_compact_at_or_none(data.get("auto_compact_at")),
        )


def _tokens_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _compact_at_or_none(value: Any) -> int | float | None:
    """Tokens, or a share of the context window (core.compaction)."""
    return value if isinstance(value, float) and 0.0 < value < 1.0 else _tokens_or_none(value)


@dataclass(frozen=True)
class Agent:
    """The persisted view of an agent: what the board shows."""

    id: str
    name: str
    state: AgentState
    spec: AgentSpec
    cwd: str
    created_at: float
    updated_at: float
    source: AgentSource = AgentSource.AGENTDECK
    session_id: str | None = None
    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    turns: int = 0
    current_tool: str | None = None
    last_error: str | None = None
    pid: int | None = None  # the Claude Code process, while one is attached
    owner_pid: int | None = None  # the agentdeck process supervising it
    parent_id: str | None = None  # the orchestrator that spawned it
    extra: dict[str, Any] = field(default_factory=dict)

    def with_changes(self, **changes: Any) -> Agent:
        return replace(self, **changes)

    @property
    def skills(self) -> tuple[str, ...]:
        """The skills Claude Code offered it at its last start (core.skills.offered)."""
        from agentdeck.core.skills import OFFERED

        found = self.extra.get(OFFERED)
        return tuple(str(s) for s in found) if isinstance(found, list) else ()

    def to_dict(self) -> dict[str, Any]:
        """The agent as JSON-ready data (API, ``--json``)."""
        return {
            "id": self.id,
            "name": self.name,
            "state": str(self.state),
            "source": str(self.source),
            "cwd": self.cwd,
            "session_id": self.session_id,
            "cost_usd": self.cost_usd,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "turns": self.turns,
            "current_tool": self.current_tool,
            "last_error": self.last_error,
            "pid": self.pid,
            "owner_pid": self.owner_pid,
            "parent_id": self.parent_id,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "spec": self.spec.to_dict(),
            "extra": dict(self.extra),
            "skills": list(self.skills),  # extra's, read: from_dict takes them from there
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Agent:
        """The agent from ``to_dict()``'s data: the API's JSON, a store row."""
        return cls(
            id=data["id"],
            name=data["name"],
            state=AgentState(data["state"]),
            spec=AgentSpec.from_dict(data.get("spec") or {}),
            cwd=data.get("cwd") or "",
            created_at=data.get("created_at") or 0.0,
            updated_at=data.get("updated_at") or 0.0,
            source=AgentSource(data.get("source") or AgentSource.AGENTDECK),
            session_id=data.get("session_id"),
            cost_usd=data.get("cost_usd") or 0.0,
            input_tokens=data.get("input_tokens") or 0,
            output_tokens=data.get("output_tokens") or 0,
            turns=data.get("turns") or 0,
            current_tool=data.get("current_tool"),
            last_error=data.get("last_error"),
            pid=data.get("pid"),
            owner_pid=data.get("owner_pid"),
            parent_id=data.get("parent_id"),
            extra=dict(data.get("extra") or {}),
        )


# In ``extra``: the stored prompt is a redacted copy (the prompt as typed held a
# secret or a ``<private>`` part); only the process that started it holds the raw one.
PROMPT_REDACTED = "prompt_redacted"


def shown_prompt(prompt: str) -> str:
    """A prompt as it may be stored and shown: scrubbed like the event log."""
    from agentdeck.core.redact import scrub  # here: reading agents needs no patterns

    return scrub(prompt) if prompt else prompt


def prompt_scrubbed(agent: Agent) -> Agent:
    """``agent`` as it may be stored and shown: its prompt scrubbed, marked
    ``PROMPT_REDACTED`` when that changed it (the same object if not)."""
    prompt = agent.spec.prompt
    shown = shown_prompt(prompt)
    if shown == prompt:
        return agent
    return agent.with_changes(
        spec=replace(agent.spec, prompt=shown), extra={**agent.extra, PROMPT_REDACTED: True}
    )


def external_agent(
    agent_id: str,
    session_id: str,
    project: str,
    *,
    now: float,
    state: AgentState,
    pid: int | None = None,
    **extra: Any,
) -> Agent:
    """The agent that stands for a hand-started Claude Code session (source
    ``external``), named after its project and session."""
    base = project.rstrip("/").rsplit("/", 1)[-1] or "session"
    return Agent(
        id=agent_id,
        name=f"{base}-{session_id[:8]}",
        state=state,
        spec=AgentSpec(prompt="", cwd=project or None, project=project or None),
        cwd=project,
        created_at=now,
        updated_at=now,
        source=AgentSource.EXTERNAL,
        session_id=session_id,
        pid=pid,
        extra=dict(extra),
    )


def find_agent(
    ref: str,
    *,
    by_id: Callable[[str], Agent | None],
    by_prefix: Callable[[str], list[Agent]],
    by_name: Callable[[str], list[Agent]],
) -> Agent:
    """The agent ``ref`` names, asking the store as little as it can: exact id, else
    unique id prefix (``MIN_PREFIX``+ characters), else unique exact name.
    Ambiguous → ``UsageError`` listing the candidates; nothing → ``NotFound``.
    A reference longer than ``MAX_REF`` is ``OutOfRange``, before the store is asked."""
    if len(ref) > MAX_REF:
        raise OutOfRange(
            f"an agent reference has at most {MAX_REF:,} characters; this one has {len(ref):,}",
            hint="use an id, an id prefix of 4+ characters, or a name",
        )
    exact = by_id(ref)
    if exact is not None:
        return exact
    if len(ref) >= MIN_PREFIX:
        with_prefix = by_prefix(ref)
        if len(with_prefix) == 1:
            return with_prefix[0]
        if with_prefix:
            raise _ambiguous(ref, "id prefix", with_prefix)
    named = by_name(ref)
    if len(named) == 1:
        return named[0]
    if named:
        raise _ambiguous(ref, "name", named)
    raise NotFound("agent", ref, hint="use an id, an id prefix of 4+ characters, or a name")


def _ambiguous(ref: str, what: str, candidates: list[Agent]) -> UsageError:
    listed = ", ".join(f"{a.id} ({a.name}, {a.state})" for a in candidates)
    return UsageError(f"{what} {ref!r} matches several agents: {listed}", hint="use the full id")
