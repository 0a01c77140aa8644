"""A template's own subagents (``subagents:``): definitions Claude Code's Agent
(``Task``) tool can start inside the agent's run — the SDK's ``agents`` option. Pure.

```yaml
subagents:
  checker:
    description: Re-runs the tests and reports what fails.
    prompt: You check work; you change nothing.
    tools: [Read, Grep, Bash]
    skills: [run-tests]
```

Template text is hostile input: names are plain words, texts are bounded and hold
no control characters or secrets, and only keys that cannot widen what the agent
may do are accepted (``description``, ``prompt``, ``tools``, ``disallowedTools``,
``model``, ``skills``, ``maxTurns``, ``effort``). A subagent's tool calls are the
agent's: the profile decides each one, as for the agent itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentdeck.core.quoting import key_shown

__all__ = ["MAX_SUBAGENTS", "Subagent", "parse_subagents"]

MAX_SUBAGENTS = 16
MAX_PROMPT = 16 * 1024
MAX_DESCRIPTION = 1024
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
_KEYS = (
    "description",
    "prompt",
    "tools",
    "disallowedTools",
    "model",
    "skills",
    "maxTurns",
    "effort",
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:\[\]-]{0,127}$")
_TOOL = re.compile(
    r"^[A-Za-z][A-Za-z0-9_]{0,63}(?:\([^\x00-\x1f]{0,256}\))?$|^mcp__[A-Za-z0-9_*-]+$"
)
_SKILL = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}(?::[a-z0-9][a-z0-9-]{0,63})?$")
_EFFORTS = ("low", "medium", "high", "xhigh", "max")
Fail = Callable[[str | None, str], None]


@dataclass(frozen=True)
class Subagent:
    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] = ()  # empty: the agent's
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None
    skills: tuple[str, ...] = ()
    max_turns: int | None = None
    effort: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "prompt": self.prompt,
            "tools": list(self.tools),
            "disallowed_tools": list(self.disallowed_tools),
            "model": self.model,
            "skills": list(self.skills),
            "max_turns": self.max_turns,
            "effort": self.effort,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Subagent:
        return cls(
            name=str(data["name"]),
            description=str(data.get("description") or ""),
            prompt=str(data.get("prompt") or ""),
            tools=tuple(data.get("tools") or ()),
            disallowed_tools=tuple(data.get("disallowed_tools") or ()),
            model=data.get("model"),
            skills=tuple(data.get("skills") or ()),
            max_turns=data.get("max_turns"),
            effort=data.get("effort"),
        )

    def definition(self) -> dict[str, Any]:
        """The SDK's ``AgentDefinition`` fields (Claude Code's names)."""
        out: dict[str, Any] = {"description": self.description, "prompt": self.prompt}
        if self.tools:
            out["tools"] = list(self.tools)
        if self.disallowed_tools:
            out["disallowedTools"] = list(self.disallowed_tools)
        if self.model:
            out["model"] = self.model
        if self.skills:
            out["skills"] = list(self.skills)
        if self.max_turns is not None:
            out["maxTurns"] = self.max_turns
        if self.effort:
            out["effort"] = self.effort
        return out


def parse_subagents(
    value: Any, fail: Fail, looks_secret: Callable[[str], bool]
) -> tuple[Subagent, ...]:
    """``subagents`` from front matter; each problem goes to ``fail(key, why)``."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        fail("subagents", "must map names to {description, prompt, …}")
        return ()
    if len(value) > MAX_SUBAGENTS:
        fail("subagents", f"more than {MAX_SUBAGENTS} subagents")
        return ()
    found: list[Subagent] = []
    for name, body in value.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            shown = key_shown(name)
            shown = "an entry" if shown.startswith("(") else shown
            fail("subagents", f"{shown} is not a subagent's name (lowercase, digits, hyphens)")
            continue

        def bad(why: str, named: str = name) -> None:
            fail("subagents", f"`{named}`: {why}")

        agent = _one(name, body, bad)
        if agent is not None:
            if any(looks_secret(t) for t in (agent.description, agent.prompt)):
                fail("subagents", f"`{name}`: its text holds what looks like a secret")
                continue
            found.append(agent)
    return tuple(found)


def _one(name: str, body: Any, bad: Callable[[str], None]) -> Subagent | None:
    if not isinstance(body, Mapping):
        bad("must be {description, prompt, …}")
        return None
    extra = sorted(str(k) for k in body if k not in _KEYS)
    if extra:
        shown = ", ".join(key_shown(k) for k in extra)
        bad(f"unknown or refused key(s) {shown} (a subagent may have {', '.join(_KEYS)})")
        return None
    texts = {}
    for key, cap in (("description", MAX_DESCRIPTION), ("prompt", MAX_PROMPT)):
        text = body.get(key)
        if not isinstance(text, str) or not text.strip():
            bad(f"`{key}` must be text")
            return None
        if len(text) > cap or _CONTROL.search(text):
            bad(f"`{key}` is over {cap:,} characters or holds control characters")
            return None
        texts[key] = text.strip()
    lists: dict[str, tuple[str, ...]] = {}
    for key, pattern in (("tools", _TOOL), ("disallowedTools", _TOOL), ("skills", _SKILL)):
        items = body.get(key, [])
        if isinstance(items, str):
            items = [t.strip() for t in items.split(",") if t.strip()]
        if not isinstance(items, list) or len(items) > 64:
            bad(f"`{key}` must be a list")
            return None
        if not all(isinstance(t, str) and pattern.fullmatch(t) for t in items):
            bad(f"`{key}` holds an entry that is not a name")
            return None
        lists[key] = tuple(items)
    model = body.get("model")
    if model is not None and (not isinstance(model, str) or not _MODEL.fullmatch(model)):
        bad("`model` is not a model's name or alias")
        return None
    turns = body.get("maxTurns")
    if turns is not None and (isinstance(turns, bool) or not isinstance(turns, int) or turns < 1):
        bad("`maxTurns` must be a whole number above 0")
        return None
    effort = body.get("effort")
    if effort is not None and effort not in _EFFORTS:
        bad(f"`effort` must be one of {', '.join(_EFFORTS)}")
        return None
    return Subagent(
        name=name,
        description=texts["description"],
        prompt=texts["prompt"],
        tools=lists["tools"],
        disallowed_tools=lists["disallowedTools"],
        model=None if model == "inherit" else model,
        skills=lists["skills"],
        max_turns=turns,
        effort=effort,
    )
