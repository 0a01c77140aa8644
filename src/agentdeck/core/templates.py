"""Agent templates: Claude Code's own agent files (``.claude/agents/*.md``). Pure.

A template is YAML front matter between ``---`` lines, then a Markdown body that
becomes the agent's appended system prompt::

    ---
    name: reviewer                  # lowercase letters, digits and hyphens
    description: Reviews a change for bugs and risks.
    tools: Read, Grep, Glob, Bash   # the only tools it has (comma list or YAML list)
    model: sonnet                   # or inherit (the default)
    # agentdeck's own keys:
    profile: strict                 # a built-in profile or .agentdeck/NAME.yaml of the
                                    # project; never looser than its parent's
    budget_usd: 2                   # spending cap (a child's is carved from its parent's)
    max_turns: 40
    workspace: shared               # new | shared | worktree
    orchestrator: false             # true: it gets the deck's orchestrator tools
    record: false                   # true: its model traffic is recorded (a cassette)
    auto_compact_at: 150000         # compacted between turns past this (tokens; 0.8: of the window)
    ---
    You review changes. …

Every other key of Claude Code's agent files is taken with Claude Code's meaning
(``permissionMode``, ``effort``, ``skills``, ``memory``, ``mcpServers``, ``hooks``,
``initialPrompt``, ``background``, ``isolation: worktree``, ``color``: see
``core.agent_file``); the policy profile still decides what any of them may loosen
(``core.templates_policy``).

``parse_template`` collects every problem — one line each, naming the file, the
key and what is wrong — instead of stopping at the first, so ``agentdeck agents
validate`` reports a file completely; a mistyped key gets the known key it is
nearest to. The text is hostile input: sizes are bounded and a secret in it is
refused.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agentdeck.core.agent import AgentSpec
from agentdeck.core.agent_file import AgentFile, looks_secret, parse_agent_file
from agentdeck.core.compaction import parse_auto_compact_at
from agentdeck.core.endpoints import ModelEndpoint, parse_model_endpoint
from agentdeck.core.memory_proposals import parse_memory_review
from agentdeck.core.output_schema import resolve_schema
from agentdeck.core.profile_ref import ACCEPTED, accepted_elsewhere
from agentdeck.core.quoting import key_shown
from agentdeck.core.thinking import parse_thinking
from agentdeck.errors import TemplateError, UsageError

__all__ = ["Problem", "Template", "TemplateError", "apply_template", "parse_template"]

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
NAME_MAX = 64
DESCRIPTION_MAX = 1024
BODY_MAX = 32 * 1024  # characters of the system prompt a template may append
WORKSPACES = ("new", "shared", "worktree")
_COLOR = re.compile(r"^[a-z]{1,16}$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
MODEL_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$")

# Claude Code's built-in tools, by the names agent files and permission rules use
# (``Task`` is the older name of ``Agent``).
BUILTIN_TOOLS = frozenset(
    {
        "Agent", "AskUserQuestion", "Bash", "BashOutput", "CronCreate", "CronDelete",
        "CronList", "Edit", "EnterPlanMode", "EnterWorktree", "ExitPlanMode", "ExitWorktree",
        "Glob", "Grep", "KillShell", "LS", "ListAgents", "Monitor", "MultiEdit",
        "NotebookEdit", "NotebookRead", "Read", "ReportFindings", "ScheduleWakeup",
        "SendMessage", "Skill", "SlashCommand", "Task", "TaskStop", "TodoWrite",
        "ToolSearch", "WebFetch", "WebSearch", "Workflow", "Write",
    }
)  # fmt: skip
_MCP_TOOL = re.compile(r"^mcp__[A-Za-z0-9_-]+?(?:__(?:[A-Za-z0-9_-]+|\*))?$")
_AGENT_TOOL = re.compile(r"^(?:Agent|Task)\([A-Za-z0-9_, -]*\)$")

AGENTDECK_KEYS = (
    "profile", "budget_usd", "max_turns", "workspace", "orchestrator", "output_schema",
    "model_endpoint", "thinking",
    "subagents", "memory_review", "config_dir", "record", "auto_compact_at",
)  # fmt: skip
CLAUDE_KEYS = (
    "name", "description", "tools", "disallowedTools", "model", "permissionMode", "maxTurns",
    "skills", "mcpServers", "hooks", "memory", "background", "effort", "isolation",
    "initialPrompt", "color",
)  # fmt: skip
# Claude Code keys agentdeck refuses, and why.
UNSUPPORTED_KEYS = {
    "disabled": "remove the file (or move it aside) to disable a template",
}
KNOWN_KEYS = (*CLAUDE_KEYS, *AGENTDECK_KEYS)

_Fail = Callable[[str | None, str], None]


@dataclass(frozen=True)
class Template:
    name: str
    description: str
    prompt: str  # the Markdown body: the appended system prompt
    tools: tuple[str, ...] = ()  # empty: every tool
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None  # None: inherit (the parent's, or the settings')
    profile: str | None = None
    budget_usd: float | None = None
    max_turns: int | None = None
    workspace: str | None = None
    orchestrator: bool = False
    color: str | None = None
    # Claude Code's other keys (permissionMode, skills, mcpServers, hooks, …)
    claude: AgentFile = field(default_factory=AgentFile)
    output_schema: dict[str, Any] | None = None  # its result's JSON Schema (core.output_schema)
    model_endpoint: ModelEndpoint | None = None  # where its model is (core.endpoints)
    thinking: dict[str, Any] | None = None  # the SDK's thinking config (core.thinking)
    memory_review: str | None = None  # inbox (None) | auto: core.memory_proposals
    record: bool = False  # its agents' model traffic is recorded (runner.recording)
    auto_compact_at: int | float | None = None  # tokens or a share: core.compaction
    source: str = "<memory>"  # the file, or "built-in:<name>"
    scope: str = "built-in"  # project | user | built-in

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "prompt": self.prompt,
            "tools": list(self.tools),
            "disallowed_tools": list(self.disallowed_tools),
            "model": self.model,
            "profile": self.profile,
            "budget_usd": self.budget_usd,
            "max_turns": self.max_turns,
            "workspace": self.workspace,
            "orchestrator": self.orchestrator,
            "color": self.color,
            "claude": self.claude.to_dict(),
            "output_schema": self.output_schema,
            "model_endpoint": self.model_endpoint.to_dict() if self.model_endpoint else None,
            "thinking": self.thinking,
            "memory_review": self.memory_review,
            "record": self.record,
            "auto_compact_at": self.auto_compact_at,
            "source": self.source,
            "scope": self.scope,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Template:
        """``to_dict``'s form back (a client's copy of a daemon's template)."""
        return cls(
            **{k: data[k] for k in _PLAIN_FIELDS},
            tools=tuple(data["tools"]),
            disallowed_tools=tuple(data["disallowed_tools"]),
            color=data.get("color"),
            claude=AgentFile.from_dict(data.get("claude")),
            output_schema=data.get("output_schema"),
            model_endpoint=ModelEndpoint.from_dict(data.get("model_endpoint")),
            thinking=data.get("thinking"),
            memory_review=data.get("memory_review"),
            record=data.get("record") is True,
            auto_compact_at=data.get("auto_compact_at"),
        )


_PLAIN_FIELDS = (
    "name", "description", "prompt", "model", "profile", "budget_usd", "max_turns",
    "workspace", "orchestrator", "source", "scope",
)  # fmt: skip


@dataclass(frozen=True)
class Problem:
    source: str
    key: str | None  # None: the file as a whole
    problem: str

    def __str__(self) -> str:
        return (
            f"{self.source}: {self.key}: {self.problem}"
            if self.key
            else (f"{self.source}: {self.problem}")
        )


def split_front_matter(text: str) -> tuple[str, str] | None:
    """``(front matter, body)``, or None when the text does not start with ``---``."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            return "".join(lines[1:end]), "".join(lines[end + 1 :])
    return None


def tool_list(value: Any) -> list[str] | None:
    """Claude Code's ``tools`` forms: a comma-separated string or a list; None
    when it is neither (a problem for the caller to report)."""
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, list | tuple) and all(isinstance(t, str) for t in value):
        return [t.strip() for t in value if t.strip()]
    return None


def known_tool(name: str) -> bool:
    return name in BUILTIN_TOOLS or bool(_MCP_TOOL.fullmatch(name) or _AGENT_TOOL.fullmatch(name))


def parse_template(
    data: Any, body: str, source: str, *, scope: str = "built-in", stem: str | None = None
) -> Template:
    """Validate parsed front matter ``data`` and the ``body``; raise
    ``TemplateError`` with every problem found. ``stem`` is the file's name
    without ``.md``, which must equal ``name`` (Claude Code finds agents by it)."""
    problems: list[Problem] = []

    def fail(key: str | None, problem: str) -> None:
        problems.append(Problem(source, key, problem))

    if not isinstance(data, Mapping):
        got = "nothing" if data is None else type(data).__name__
        raise TemplateError([Problem(source, None, f"the front matter is {got}, not a mapping")])
    for key in data:
        if not isinstance(key, str):
            fail(None, "keys must be strings")
        elif key in UNSUPPORTED_KEYS:
            fail(key, f"not supported by agentdeck: {UNSUPPORTED_KEYS[key]}")
        elif key not in KNOWN_KEYS:
            fail(*_unknown_key(key))

    name = data.get("name")
    if not isinstance(name, str) or not name:
        fail("name", "missing: every template has a name")
        name = stem or "?"
    elif len(name) > NAME_MAX or not NAME_PATTERN.fullmatch(name):
        fail(
            "name",
            "not a valid name: lowercase letters, digits and single hyphens, "
            f"starting with a letter, at most {NAME_MAX} characters",
        )
    elif stem is not None and stem != name:
        fail("name", f"differs from the file name {stem}.md; rename one of them")

    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        fail("description", "missing: say what the agent is for (orchestrators read it)")
        description = ""
    elif len(description) > DESCRIPTION_MAX:
        fail("description", f"longer than {DESCRIPTION_MAX} characters")
    elif _CONTROL.search(description):
        fail("description", "holds control characters (an escape sequence, NUL…)")

    tools = _tools(data, "tools", fail)
    disallowed = _tools(data, "disallowedTools", fail)

    model = data.get("model")
    if model is not None and (not isinstance(model, str) or not MODEL_PATTERN.fullmatch(model)):
        fail("model", "not a model name or alias (sonnet, opus, haiku, inherit)")
        model = None
    if model == "inherit":
        model = None

    profile = data.get("profile")
    if profile is not None and (not isinstance(profile, str) or not profile.strip()):
        fail("profile", f"must be {ACCEPTED}")
        profile = None
    elif isinstance(profile, str) and not accepted_elsewhere(profile.strip()):
        # Never a path: an agent may write templates, and the deck would read the
        # file for it. The value is not quoted back either.
        fail("profile", f"must be {ACCEPTED}")
        profile = None

    budget = data.get("budget_usd")
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int | float) or not budget > 0
    ):
        fail("budget_usd", "must be a number of USD above 0")
        budget = None

    turns = _turns(data, fail)

    workspace = data.get("workspace")
    if workspace is not None and workspace not in WORKSPACES:
        fail("workspace", f"must be one of {', '.join(WORKSPACES)}")
        workspace = None
    isolation = data.get("isolation")
    if isolation is not None and isolation != "worktree":
        fail("isolation", "must be worktree (Claude Code's only isolation)")
    elif isolation is not None and workspace not in (None, "worktree"):
        fail("isolation", f"isolation: worktree contradicts workspace: {workspace}")
    elif isolation is not None:
        workspace = "worktree"

    orchestrator = data.get("orchestrator", False)
    if not isinstance(orchestrator, bool):
        fail("orchestrator", "must be true or false")
        orchestrator = False

    record = data.get("record", False)
    if not isinstance(record, bool):
        fail("record", "must be true or false")
        record = False

    auto_compact_at = None
    try:
        auto_compact_at = parse_auto_compact_at(data.get("auto_compact_at"))
    except UsageError as exc:
        fail("auto_compact_at", str(exc).removeprefix("auto_compact_at "))

    color = data.get("color")
    if color is not None and (not isinstance(color, str) or not _COLOR.fullmatch(color)):
        fail("color", "must be a color's name (red, blue, green, yellow, purple, orange, …)")
        color = None

    claude = parse_agent_file(data, fail)
    output_schema = None
    if data.get("output_schema") is not None:
        try:
            output_schema = resolve_schema(data["output_schema"])
        except UsageError as exc:
            fail("output_schema", str(exc))
    model_endpoint = parse_model_endpoint(data.get("model_endpoint"), fail)
    thinking = parse_thinking(data.get("thinking"), fail)
    memory_review = parse_memory_review(data.get("memory_review"), fail)
    for server in claude.mcp_servers if tools else ():
        prefix = f"mcp__{server.name}"
        if not any(t == prefix or t.startswith(prefix + "__") for t in tools):
            fail("mcpServers", f"server `{server.name}` has no tool in `tools`; add {prefix}")
    if tools and claude.skills and not any(t.split("(")[0] == "Skill" for t in tools):
        fail(
            "skills",
            "its skills are used through the Skill tool, which `tools` leaves out; add Skill",
        )
    if tools and claude.subagents and not any(t.split("(")[0] in ("Agent", "Task") for t in tools):
        fail(
            "subagents",
            "its subagents are started through the Agent tool, which `tools` leaves out; add Agent",
        )

    prompt = body.strip()
    if len(prompt) > BODY_MAX:
        fail(None, f"the body (system prompt) has {len(prompt):,} characters; at most {BODY_MAX:,}")
    elif not prompt:
        fail(None, "the body is empty: it is the agent's system prompt")
    elif looks_secret(prompt) or looks_secret(str(description)):
        fail(None, "the text holds what looks like a secret; secrets come from the environment")

    if problems:
        raise TemplateError(problems)
    return Template(
        name=str(name),
        description=str(description).strip(),
        prompt=prompt,
        tools=tuple(tools),
        disallowed_tools=tuple(disallowed),
        model=model,
        profile=profile.strip() if isinstance(profile, str) else None,
        budget_usd=float(budget) if budget is not None else None,
        max_turns=turns,
        workspace=workspace,
        orchestrator=orchestrator,
        color=color,
        claude=claude,
        output_schema=output_schema,
        model_endpoint=model_endpoint,
        thinking=thinking,
        memory_review=memory_review,
        record=record,
        auto_compact_at=auto_compact_at,
        source=source,
        scope=scope,
    )


def _unknown_key(key: str) -> tuple[str | None, str]:
    shown = key_shown(key, ticks=False)  # never a file's contents
    if shown != key:
        return None, f"unknown key {shown} (known: {', '.join(KNOWN_KEYS)})"
    near = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.6)
    if not near:
        lowered = {k.lower().replace("_", ""): k for k in KNOWN_KEYS}
        near = [lowered[k]] if (k := key.lower().replace("_", "")) in lowered else []
    if near:
        return key, f"unknown key; did you mean {near[0]}? (known: {', '.join(KNOWN_KEYS)})"
    return key, f"unknown key (known: {', '.join(KNOWN_KEYS)})"


def _tools(data: Mapping[str, Any], key: str, fail: _Fail) -> list[str]:
    if data.get(key) is None:
        return []
    tools = tool_list(data[key])
    if tools is None:
        fail(key, "must be a comma-separated string or a list of tool names")
        return []
    for tool in tools:
        if not known_tool(tool):
            shown = key_shown(tool).replace("(a key that is no word)", "(not a tool name)")
            fail(key, f"unknown tool {shown} (Claude Code's tools, or mcp__server__tool)")
    return tools


def _turns(data: Mapping[str, Any], fail: _Fail) -> int | None:
    keys = [k for k in ("max_turns", "maxTurns") if data.get(k) is not None]
    if len(keys) == 2:
        fail("maxTurns", "give max_turns or maxTurns, not both")
    if not keys:
        return None
    value = data[keys[0]]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        fail(keys[0], "must be a whole number of turns, 1 or more")
        return None
    return int(value)


def apply_template(template: Template, spec: AgentSpec) -> AgentSpec:
    """``spec`` made from ``template``: what the caller set explicitly wins; the
    template's body comes before any prompt text the caller appends."""
    append = template.prompt
    if spec.append_system_prompt:
        append = f"{append}\n\n{spec.append_system_prompt}"
    prompt = spec.prompt
    if template.claude.initial_prompt:  # Claude Code puts it before the task it is given
        first = template.claude.initial_prompt
        prompt = f"{first}\n\n{prompt}" if prompt.strip() else first
    return replace(
        spec,
        prompt=prompt,
        claude=template.claude,
        output_schema=spec.output_schema or template.output_schema,
        model_endpoint=spec.model_endpoint or template.model_endpoint,
        thinking=spec.thinking or template.thinking,
        template=template.name,
        model=spec.model or template.model,
        max_turns=spec.max_turns or template.max_turns,
        budget_usd=spec.budget_usd if spec.budget_usd is not None else template.budget_usd,
        profile=spec.profile or template.profile,
        deny=tuple(dict.fromkeys((*spec.deny, *template.disallowed_tools))),
        tools=template.tools,
        orchestrator=template.orchestrator,
        workspace=spec.workspace or template.workspace,
        append_system_prompt=append,
        # An orchestrator's tree is worth carrying over a daemon restart.
        resume_on_restart=spec.resume_on_restart or template.orchestrator,
        record=spec.record or template.record,
        auto_compact_at=spec.auto_compact_at or template.auto_compact_at,
    )
