"""Merging agentdeck's entries into a Claude Code settings object, and taking
them out: pure functions on parsed JSON (the installer does the files).

Our entries are recognised by a trailing shell comment (``MARKER``) or by the
client's path, so a later install replaces them even when the interpreter moved.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentdeck.errors import ConfigError

MARKER = "# agentdeck-hook"
CLIENT_SUFFIX = "agentdeck/hooks/client.py"


def is_ours(command: object) -> bool:
    return isinstance(command, str) and (
        command.rstrip().endswith(MARKER) or CLIENT_SUFFIX in command
    )


def _is_our_hook(hook: object) -> bool:
    return isinstance(hook, dict) and is_ours(hook.get("command"))


def _is_group(group: object) -> bool:
    return isinstance(group, dict) and isinstance(group.get("hooks"), list)


def _without_ours(groups: list[Any]) -> list[Any]:
    out = []
    for g in groups:
        if not _is_group(g):
            out.append(g)
            continue
        kept = [h for h in g["hooks"] if not _is_our_hook(h)]
        if len(kept) == len(g["hooks"]):
            out.append(g)
        elif kept:
            out.append({**g, "hooks": kept})
    return out


def _with_ours(groups: list[Any], ours: dict[str, Any]) -> list[Any]:
    """Our group in place of the first old one (so order and idempotence hold)."""
    out, placed = [], False
    for g in groups:
        if not _is_group(g) or not any(_is_our_hook(h) for h in g["hooks"]):
            out.append(g)
            continue
        others = [h for h in g["hooks"] if not _is_our_hook(h)]
        if placed:
            if others:
                out.append({**g, "hooks": others})
        elif not others:
            out.append(copy.deepcopy(ours))
        else:
            first = next(i for i, h in enumerate(g["hooks"]) if _is_our_hook(h))
            hooks = [
                copy.deepcopy(ours["hooks"][0]) if i == first else h
                for i, h in enumerate(g["hooks"])
                if i == first or not _is_our_hook(h)
            ]
            out.append({**g, "hooks": hooks})
        placed = True
    if not placed:
        out.append(copy.deepcopy(ours))
    return out


def merged(data: dict[str, Any], fragment: dict[str, Any], source: Path) -> dict[str, Any]:
    """``data`` with our entries for every event in ``fragment``; no stale ones elsewhere."""
    out = copy.deepcopy(data)
    hooks = _hooks_of(out, source)
    wanted = fragment["hooks"]
    for event in [e for e in hooks if e not in wanted]:  # events an older version used
        _strip_event(hooks, event, source)
    for event, (ours,) in wanted.items():
        hooks[event] = _with_ours(_groups_of(hooks.get(event, []), event, source), ours)
    out["hooks"] = hooks
    return out


def stripped(data: dict[str, Any], source: Path) -> dict[str, Any]:
    """``data`` without any agentdeck entry; lists and ``hooks`` we emptied go too."""
    out = copy.deepcopy(data)
    if "hooks" not in out:
        return out
    hooks = _hooks_of(out, source)
    for event in list(hooks):
        _strip_event(hooks, event, source)
    if not hooks and data["hooks"]:
        del out["hooks"]
    return out


def _strip_event(hooks: dict[str, Any], event: str, source: Path) -> None:
    groups = hooks[event]
    kept = _without_ours(_groups_of(groups, event, source))
    if not kept and groups:
        del hooks[event]
    else:
        hooks[event] = kept


def installed_events(data: dict[str, Any]) -> dict[str, list[str]]:
    """Event → our commands in it (malformed parts are simply not ours)."""
    found: dict[str, list[str]] = {}
    for event, hook in _our_hooks(data):
        found.setdefault(event, []).append(hook["command"])
    return found


def installed_timeouts(data: dict[str, Any]) -> list[object]:
    """The distinct ``timeout`` values of our entries (None where one has none)."""
    found: list[object] = []
    for _, hook in _our_hooks(data):
        if hook.get("timeout") not in found:
            found.append(hook.get("timeout"))
    return found


def _our_hooks(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event, groups in hooks.items():
        for g in groups if isinstance(groups, list) else []:
            for h in g["hooks"] if _is_group(g) else []:
                if _is_our_hook(h):
                    yield event, h


def _hooks_of(data: dict[str, Any], source: Path) -> dict[str, Any]:
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(
            f"{source}: `hooks` is a {type(hooks).__name__}, not an object",
            hint="fix it by hand (Claude Code expects an object of events); it was left untouched",
        )
    return hooks


def _groups_of(groups: object, event: str, source: Path) -> list[Any]:
    if not isinstance(groups, list):
        raise ConfigError(
            f"{source}: `hooks.{event}` is a {type(groups).__name__}, not a list",
            hint="fix it by hand (Claude Code expects a list of matchers); it was left untouched",
        )
    return groups
