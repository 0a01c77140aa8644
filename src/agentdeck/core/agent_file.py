"""The keys of Claude Code's agent files beyond the ones every spec has. Pure.

``tools``, ``disallowedTools``, ``model`` and ``maxTurns`` map onto the spec's own
fields; what is here is the rest, with the meaning Claude Code gives it:

* ``permissionMode`` — the session's permission mode (``default``, ``acceptEdits``,
  ``plan``, ``dontAsk``, ``auto``, ``bypassPermissions``); the policy profile caps
  it (``core.templates_policy``).
* ``effort`` — the reasoning effort (``low`` … ``max``).
* ``skills`` — skill names to preload (found by name, never by path).
* ``memory`` — the agent's persistent memory scope (``user``, ``project``, ``local``).
* ``mcpServers`` — a server's name (configured elsewhere) or an inline definition
  (``{name: {command, args, env}}`` or ``{name: {type: http|sse, url, headers}}``);
  its tools are ``mcp__name__tool`` subjects of the policy.
* ``hooks`` — command hooks Claude Code runs, in its settings' shape
  (``{Event: [{matcher, hooks: [{type: command, command, timeout}]}]}``).
* ``initialPrompt`` — the first user turn, put before the task it is given.
* ``background`` — always run as a background task.
* ``config_dir`` — agentdeck's: ``isolated`` runs the agent with a Claude config
  directory of its own (``runner.config_dirs``); ``shared`` (the default) with the user's.

``parse_agent_file`` reads them from front matter, reporting problems through a
callback; the template text is hostile input (an agent may write its own
``.claude/agents/x.md``): sizes are bounded and secrets are refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentdeck.core.quoting import key_shown
from agentdeck.core.subagents import Subagent, parse_subagents

__all__ = ["AgentFile", "Hook", "McpServer", "looks_secret", "parse_agent_file"]

PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "auto", "bypassPermissions")
EFFORTS = ("low", "medium", "high", "xhigh", "max")
MEMORY_SCOPES = ("user", "project", "local")
CONFIG_DIRS = ("isolated", "shared")
HOOK_EVENTS = (
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "UserPromptSubmit",
    "Notification", "Stop", "SubagentStart", "SubagentStop", "PreCompact", "SessionStart",
    "SessionEnd",
)  # fmt: skip
SKILL_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}(?::[a-z0-9][a-z0-9-]{0,63})?$")
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
RESERVED_SERVERS = frozenset({"deck"})  # agentdeck's own server for its agents
# ``${NAME}`` in a server's definition: a value from the operator's environment or
# secrets file (``runner.mcp_servers``), never one of these.
SECRET_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]{0,127})\}")
DECK_OWN_NAMES = ("ANTHROPIC_", "CLAUDE_", "AGENTDECK_", "AWS_", "GOOGLE_APPLICATION_")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_HEADER = re.compile(r"^[A-Za-z0-9-]{1,64}$")
_MATCHER = re.compile(r"^[A-Za-z0-9_|*().:\- ]{0,256}$")
MAX_SKILLS = 64
MAX_SERVERS = 16
MAX_HOOKS = 32
MAX_ITEMS = 64  # args, env entries, headers of one server
MAX_TEXT = 4096  # one command, argument, URL or value
MAX_INITIAL_PROMPT = 16 * 1024

Fail = Callable[[str | None, str], None]


@dataclass(frozen=True)
class McpServer:
    """One ``mcpServers`` entry: ``config`` None names a server configured
    elsewhere (the project's ``.mcp.json``, the user's settings)."""

    name: str
    config: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "config": dict(self.config) if self.config else None}


@dataclass(frozen=True)
class Hook:
    """One command hook: Claude Code runs ``command`` on ``event`` (for the tools
    ``matcher`` names, when the event has tools)."""

    event: str
    command: str
    matcher: str | None = None
    timeout: int | None = None  # seconds

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": self.event,
            "command": self.command,
            "matcher": self.matcher,
            "timeout": self.timeout,
        }


@dataclass(frozen=True)
class AgentFile:
    """Claude Code's agent-file keys a spec carries to the process that runs it."""

    permission_mode: str | None = None
    effort: str | None = None
    skills: tuple[str, ...] = ()
    memory: str | None = None
    mcp_servers: tuple[McpServer, ...] = ()
    hooks: tuple[Hook, ...] = ()
    initial_prompt: str | None = None
    background: bool = False
    subagents: tuple[Subagent, ...] = ()  # agentdeck's ``subagents:`` (core.subagents)
    config_dir: str | None = None  # "isolated": its own CLAUDE_CONFIG_DIR; None: the user's

    def __bool__(self) -> bool:
        return self != AgentFile()

    def to_dict(self) -> dict[str, Any]:
        return {
            "permission_mode": self.permission_mode,
            "effort": self.effort,
            "skills": list(self.skills),
            "memory": self.memory,
            "mcp_servers": [s.to_dict() for s in self.mcp_servers],
            "hooks": [h.to_dict() for h in self.hooks],
            "initial_prompt": self.initial_prompt,
            "background": self.background,
            "subagents": [a.to_dict() for a in self.subagents],
            **({"config_dir": self.config_dir} if self.config_dir else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> AgentFile:
        if not data:
            return cls()
        return cls(
            permission_mode=data.get("permission_mode"),
            effort=data.get("effort"),
            skills=tuple(data.get("skills") or ()),
            memory=data.get("memory"),
            mcp_servers=tuple(
                McpServer(str(s["name"]), s.get("config")) for s in data.get("mcp_servers") or ()
            ),
            hooks=tuple(
                Hook(str(h["event"]), str(h["command"]), h.get("matcher"), h.get("timeout"))
                for h in data.get("hooks") or ()
            ),
            initial_prompt=data.get("initial_prompt"),
            background=bool(data.get("background", False)),
            subagents=tuple(Subagent.from_dict(a) for a in data.get("subagents") or ()),
            config_dir="isolated" if data.get("config_dir") == "isolated" else None,
        )

    def hook_settings(self) -> dict[str, Any]:
        """The hooks in Claude Code's settings shape (``{"hooks": {...}}``)."""
        events: dict[str, list[dict[str, Any]]] = {}
        for hook in self.hooks:
            command: dict[str, Any] = {"type": "command", "command": hook.command}
            if hook.timeout is not None:
                command["timeout"] = hook.timeout
            entry: dict[str, Any] = {"hooks": [command]}
            if hook.matcher is not None:
                entry["matcher"] = hook.matcher
            events.setdefault(hook.event, []).append(entry)
        return {"hooks": events} if events else {}


def looks_secret(text: str) -> bool:
    """Whether ``text`` holds what memory would redact as a secret."""
    from agentdeck.core.redact import redact  # only where templates are read

    return redact(text) != text


def parse_agent_file(data: Mapping[str, Any], fail: Fail) -> AgentFile:
    """The keys from front matter ``data``; each problem goes to ``fail(key, why)``."""
    mode = _choice(data, "permissionMode", PERMISSION_MODES, fail)
    effort = _choice(data, "effort", EFFORTS, fail)
    memory = _choice(data, "memory", MEMORY_SCOPES, fail)
    background = data.get("background", False)
    if not isinstance(background, bool):
        fail("background", "must be true or false")
        background = False
    initial = data.get("initialPrompt")
    if initial is not None:
        if not isinstance(initial, str) or not initial.strip():
            fail("initialPrompt", "must be text: the first message the agent is given")
            initial = None
        elif len(initial) > MAX_INITIAL_PROMPT:
            fail("initialPrompt", f"longer than {MAX_INITIAL_PROMPT:,} characters")
            initial = None
        elif _CONTROL.search(initial):
            fail("initialPrompt", "holds control characters (an escape sequence, NUL…)")
            initial = None
        elif looks_secret(initial):
            fail("initialPrompt", _SECRET)
            initial = None
    config_dir = _choice(data, "config_dir", CONFIG_DIRS, fail)
    return AgentFile(
        config_dir=config_dir if config_dir == "isolated" else None,
        permission_mode=mode,
        effort=effort,
        skills=_skills(data.get("skills"), fail),
        memory=memory,
        mcp_servers=_servers(data.get("mcpServers"), fail),
        hooks=_hooks(data.get("hooks"), fail),
        initial_prompt=initial.strip() if isinstance(initial, str) else None,
        background=background,
        subagents=parse_subagents(data.get("subagents"), fail, looks_secret),
    )


_SECRET = (
    "holds what looks like a secret; a template is no place for one "
    "(secrets come from the environment: write ${NAME} and set NAME there)"
)


def _choice(data: Mapping[str, Any], key: str, choices: tuple[str, ...], fail: Fail) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if value not in choices:
        fail(key, f"must be one of {', '.join(choices)}")
        return None
    return str(value)


def _skills(value: Any, fail: Fail) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [s.strip() for s in value.split(",") if s.strip()]
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        fail("skills", "must be a list of skill names")
        return ()
    if len(value) > MAX_SKILLS:
        fail("skills", f"more than {MAX_SKILLS} skills")
        return ()
    names = []
    for name in value:
        if SKILL_NAME.fullmatch(name):
            names.append(name)
        elif "/" in name or "\\" in name or ".." in name:
            fail("skills", f"{_named(name)} is a path: a skill is named, not located")
        else:
            fail("skills", f"{_named(name)} is not a skill name (lowercase, digits, hyphens)")
    return tuple(dict.fromkeys(names))


def _servers(value: Any, fail: Fail) -> tuple[McpServer, ...]:
    if value is None:
        return ()
    entries: list[tuple[Any, Any]] = []
    if isinstance(value, Mapping):  # .mcp.json's shape: {name: config}
        entries = list(value.items())
    elif isinstance(value, list):  # the agent file's: names and {name: config}
        for item in value:
            if isinstance(item, Mapping) and len(item) == 1:
                entries.extend(item.items())
            elif isinstance(item, str):
                entries.append((item, None))
            else:
                fail("mcpServers", "each entry is a server's name or {name: definition}")
    else:
        fail("mcpServers", "must be a list of server names or {name: definition}")
    if len(entries) > MAX_SERVERS:
        fail("mcpServers", f"more than {MAX_SERVERS} servers")
        return ()
    servers: dict[str, McpServer] = {}
    for name, config in entries:
        if not isinstance(name, str) or not SERVER_NAME.fullmatch(name):
            fail("mcpServers", f"{_named(name)} is not a server name (letters, digits, _ -)")
        elif name in RESERVED_SERVERS:
            fail("mcpServers", f"`{name}` is agentdeck's own server; name yours otherwise")
        elif name in servers:
            fail("mcpServers", f"`{name}` is given twice")
        elif config is None or _server_ok(name, config, fail):
            servers[name] = McpServer(name, dict(config) if config is not None else None)
    return tuple(servers.values())


def _server_ok(name: str, config: Any, fail: Fail) -> bool:
    def bad(problem: str) -> bool:
        fail("mcpServers", f"server `{name}`: {problem}")
        return False

    if not isinstance(config, Mapping):
        return bad("its definition must be a mapping")
    kind = config.get("type", "stdio" if "command" in config else None)
    allowed = {"stdio": {"type", "command", "args", "env"}, "http": {"type", "url", "headers"}}
    allowed["sse"] = allowed["http"]
    if kind not in allowed:
        return bad("give `command` (stdio) or `type: http`/`sse` with `url`")
    extra = sorted(str(k) for k in config if k not in allowed[kind])
    if extra:
        return bad(f"unknown key(s) {', '.join(key_shown(k) for k in extra)} for a {kind} server")
    if kind == "stdio":
        if not _text(config.get("command")):
            return bad("`command` must be a program to run")
        args = config.get("args", [])
        if not isinstance(args, list) or len(args) > MAX_ITEMS or not all(map(_text, args)):
            return bad(f"`args` must be a list of at most {MAX_ITEMS} strings")
        texts = [config["command"], *args]
        pairs = _pairs(config.get("env", {}), _ENV_NAME)
        what = "env"
    else:
        url = config.get("url")
        if not isinstance(url, str) or not _text(url) or not re.match(r"^https?://", url):
            return bad("`url` must be an http:// or https:// address")
        texts, pairs, what = [url], _pairs(config.get("headers", {}), _HEADER), "headers"
    if pairs is None:
        return bad(f"`{what}` must map at most {MAX_ITEMS} names to strings")
    for text in [*texts, *(v for _, v in pairs)]:
        refused = reference_refused(text)
        if refused:
            return bad(refused)
    secret = [k for k, v in pairs if looks_secret(f"{k}={v}") or looks_secret(f"{k}: {v}")]
    if secret or any(looks_secret(t) for t in texts):
        where = f"{what} {', '.join(secret)}" if secret else "its command line or url"
        return bad(f"{where} {_SECRET}")
    return True


def reference_refused(text: str) -> str | None:
    """Why ``text``'s ``${…}`` references may not be expanded, or None: only
    ``${NAME}`` (Claude Code would expand ``${NAME:-default}`` too), never a name
    of the deck's or Claude Code's own credentials, which a hostile template
    would send to a server of its choosing."""
    names = SECRET_REF.findall(text)
    if text.count("${") != len(names):
        return "only ${NAME} references are expanded (letters, digits, _)"
    for name in names:
        if name.upper().startswith(DECK_OWN_NAMES):
            return f"may not name ${{{name}}}: the deck's own credentials stay with it"
    return None


def _named(value: Any) -> str:
    """A value of the file shown back only when it is a plain word."""
    shown = key_shown(value)
    return "an entry" if shown.startswith("(") else shown


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # NUL, escapes…: a line or tab passes


def _text(value: Any) -> bool:
    """A bounded string a terminal shows as it is (``agents show`` prints them)."""
    return isinstance(value, str) and 0 < len(value) <= MAX_TEXT and not _CONTROL.search(value)


def _pairs(value: Any, names: re.Pattern[str]) -> list[tuple[str, str]] | None:
    if not isinstance(value, Mapping) or len(value) > MAX_ITEMS:
        return None
    pairs = list(value.items())
    if not all(isinstance(k, str) and names.fullmatch(k) and _text(v) for k, v in pairs):
        return None
    return pairs


def _hooks(value: Any, fail: Fail) -> tuple[Hook, ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        fail("hooks", "must map events (PreToolUse, Stop, …) to lists of {matcher, hooks}")
        return ()
    found: list[Hook] = []
    for event, entries in value.items():
        if event not in HOOK_EVENTS:
            fail("hooks", f"{_named(event)} is not a hook event ({', '.join(HOOK_EVENTS)})")
            continue
        if not isinstance(entries, list):
            fail("hooks", f"{event}: must be a list of {{matcher, hooks}}")
            continue
        for entry in entries:
            found.extend(_hook_entry(event, entry, fail))
    if len(found) > MAX_HOOKS:
        fail("hooks", f"more than {MAX_HOOKS} hooks")
        return ()
    return tuple(found)


def _hook_entry(event: str, entry: Any, fail: Fail) -> list[Hook]:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("hooks"), list):
        fail("hooks", f"{event}: each entry is {{matcher, hooks: [{{type: command, command}}]}}")
        return []
    matcher = entry.get("matcher")
    if matcher is not None and (not isinstance(matcher, str) or not _MATCHER.fullmatch(matcher)):
        fail("hooks", f"{event}: `matcher` must name tools (Bash, Edit|Write, mcp__x__.*)")
        return []
    hooks = []
    for hook in entry["hooks"]:
        if not isinstance(hook, Mapping) or hook.get("type") != "command":
            fail("hooks", f"{event}: only command hooks ({{type: command, command: …}})")
            continue
        command, timeout = hook.get("command"), hook.get("timeout")
        if not isinstance(command, str) or not _text(command):
            fail("hooks", f"{event}: `command` must be a command line")
        elif timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int) or not 0 < timeout <= 3600
        ):
            fail("hooks", f"{event}: `timeout` must be whole seconds, 1 to 3600")
        elif looks_secret(command):
            fail("hooks", f"{event}: the command {_SECRET}")
        else:
            hooks.append(Hook(event, command, matcher, timeout))
    return hooks
