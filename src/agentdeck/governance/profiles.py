"""Read profiles: shipped YAML ones, YAML files, or Claude Code ``settings.json``.

``load_profile(x)`` takes a built-in name (``default``, ``strict``, ``permissive``)
or a path. A ``.json`` file is a Claude Code settings file: its ``permissions``
block (``allow``, ``ask``, ``deny``, ``defaultMode``, ``additionalDirectories``)
is imported as it is; ``defaultMode`` is carried as ``permission_mode`` and
sets the default decision (``dontAsk`` and ``plan`` → deny, ``bypassPermissions``
→ allow, anything else → ask). Other settings keys are ignored. Errors are
``PolicyError``s naming the file, the line when known, and the problem.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from agentdeck.core.policy import KeyPath, Profile, Rule, profile_from_dict
from agentdeck.core.policy_profile import PROFILE_KEYS
from agentdeck.core.policy_secrets import secret_rules
from agentdeck.core.profile_ref import ACCEPTED, PROJECT_DIR, names_a_file, project_file
from agentdeck.core.quoting import scrubbed
from agentdeck.errors import PolicyError

if TYPE_CHECKING:
    from agentdeck.settings import Settings

# Beside this module (``importlib.resources`` would cost `policy check` 20 ms to import).
_SHIPPED = Path(__file__).resolve().parent / "profiles"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The words of the format, which an error may quote although the file holds them.
_VOCABULARY = frozenset(
    {*PROFILE_KEYS, "mode", "required", "filesystem", "network", "allow_write", "deny_read",
     "deny_write", "allowed_domains", "max_usd", "max_turns", "max_wall_seconds", "daily_usd",
     "max_consecutive_tool_errors", "max_repeated_calls", "permissions", "defaultMode"}
)  # fmt: skip
_MODE_DEFAULTS = {"dontAsk": "deny", "plan": "deny", "bypassPermissions": "allow"}


def builtin_profile_names() -> list[str]:
    return sorted(p.name.removesuffix(".yaml") for p in _SHIPPED.glob("*.yaml"))


def load_profile(path_or_name: str | Path) -> Profile:
    """A shipped profile by name, or a YAML / settings.json file by path."""
    text_name = str(path_or_name)
    if not isinstance(path_or_name, Path) and not names_a_file(text_name):
        if text_name not in builtin_profile_names():
            known = ", ".join(builtin_profile_names())
            raise PolicyError(text_name, f"no such profile (built-in: {known}; or a file)")
        shipped = _SHIPPED / f"{text_name}.yaml"
        return profile_from_yaml(shipped.read_text(encoding="utf-8"), f"{text_name}.yaml")
    path = Path(path_or_name)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PolicyError(str(path), "not UTF-8 text: not a profile") from None
    except OSError as exc:
        raise PolicyError(str(path), f"cannot read the profile: {exc.strerror or exc}") from None
    try:
        if path.suffix == ".json":
            profile = profile_from_settings_json(text, str(path))
        else:
            profile = profile_from_yaml(text, str(path))
    except PolicyError as exc:
        # Whoever named the file may not be able to read it: never what it holds.
        problem = scrubbed(exc.problem, text, _VOCABULARY)
        raise PolicyError(exc.source, problem, line=exc.line) from None
    if profile.name in builtin_profile_names():
        # A file (an agent may have written one in its project's .agentdeck/) that
        # calls itself `strict` would be shown, and asked about, as the built-in.
        raise PolicyError(
            str(path),
            f"calls itself `{profile.name}`, the name of a built-in profile: give it a name "
            f"of its own (`name: my-{profile.name}`)",
        )
    return profile


def in_project(ref: str, project: str | Path | None) -> Path:
    """The file a ``.agentdeck/NAME`` reference names in ``project``: a regular
    file in a real directory, neither of them a symbolic link (a link an agent
    planted could point anywhere). ``ValueError`` says what is wrong, never
    what the file holds."""
    name = project_file(ref)
    if name is None:
        raise ValueError(f"must be {ACCEPTED}")
    if not project:
        raise ValueError(f"names a file in a project's {PROJECT_DIR}/, but there is no project")
    folder = Path(project).expanduser().resolve() / PROJECT_DIR
    path = folder / name
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            raise ValueError(f"{folder} is not a directory (a link is not followed)")
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise ValueError(f"{path} is not a regular file (a link is not followed)")
    except OSError as exc:
        raise ValueError(f"{path} cannot be read: {exc.strerror or exc}") from None
    return path


def deck_secrets(settings: Settings) -> tuple[Rule, ...]:
    """The deny rules that keep agents off agentdeck's home and Claude Code's
    credentials (``core.policy_secrets``), for this deck's places."""
    claude = settings.claude_config_dir or Path("~/.claude")
    return secret_rules(
        home=str(settings.home_dir),
        claude_config=str(claude.expanduser().resolve()),
        user_home=str(Path.home()),
    )


def guarded(profile: Profile, settings: Settings) -> Profile:
    """``profile`` with the deck's secrets denied before its own rules: every
    profile an agent runs under, shipped or a user's own, gets them."""
    return dataclasses.replace(profile, deny=(*deck_secrets(settings), *profile.deny))


def load_guarded(path_or_name: str | Path, settings: Settings) -> Profile:
    """``load_profile`` plus ``guarded``: what an agent runs under."""
    return guarded(load_profile(path_or_name), settings)


def profile_from_yaml(text: str, source: str) -> Profile:
    # One parse gives both the lines (for errors) and the data; libyaml's when there.
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        # Its line and column, never its text (yaml's message quotes the file).
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        where = f" (column {mark.column + 1})" if mark is not None else ""
        raise PolicyError(source, f"invalid YAML{where}", line=line) from None
    except yaml.YAMLError:
        raise PolicyError(source, "invalid YAML") from None
    finally:
        loader.dispose()
    lines: dict[KeyPath, int] = {}
    if node is not None:
        _collect_lines(node, (), lines)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise PolicyError(source, "a profile is a mapping of keys (name, allow, deny, …)", line=1)
    return profile_from_dict(data, source, lines=lines)


def _collect_lines(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                _collect_lines(value, (*path, key.value), lines)
                lines[(*path, key.value)] = key.start_mark.line + 1  # the key's line wins
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _collect_lines(item, (*path, index), lines)


def profile_from_settings_json(text: str, source: str) -> Profile:
    """A Claude Code settings file's ``permissions`` block as a profile."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f" (column {exc.colno})"
        raise PolicyError(source, f"invalid JSON: {exc.msg}{where}", line=exc.lineno) from None
    if not isinstance(data, dict):
        raise PolicyError(source, "a settings file is a JSON object", line=1)
    perms = data.get("permissions", {})
    if not isinstance(perms, dict):
        raise PolicyError(
            source, "`permissions` must be an object", line=_line_of(text, "permissions")
        )
    mode = perms.get("defaultMode")
    if mode is not None and not isinstance(mode, str):
        raise PolicyError(
            source, "`defaultMode` must be a string", line=_line_of(text, "defaultMode")
        )
    profile: dict[str, Any] = {
        "name": Path(source).stem,
        "allow": perms.get("allow"),
        "ask": perms.get("ask"),
        "deny": perms.get("deny"),
        "additional_directories": perms.get("additionalDirectories"),
        "permission_mode": mode,
        "default": _MODE_DEFAULTS.get(mode or "", "ask"),
    }
    json_keys = {
        "additional_directories": "additionalDirectories",
        "permission_mode": "defaultMode",
    }
    lines: dict[KeyPath, int] = {}
    for key in ("allow", "ask", "deny", "additional_directories"):
        raw_key = json_keys.get(key, key)
        key_line = _line_of(text, raw_key)
        if key_line is not None:
            lines[(key,)] = key_line
        items = profile[key]
        if isinstance(items, list):
            offset = text.find(f'"{raw_key}"')
            for index, item in enumerate(items):
                found = text.find(json.dumps(item), offset) if offset >= 0 else -1
                if found >= 0:
                    lines[(key, index)] = text.count("\n", 0, found) + 1
                    offset = found + 1
    return profile_from_dict(
        {k: v for k, v in profile.items() if v is not None}, source, lines=lines
    )


def _line_of(text: str, key: str) -> int | None:
    found = text.find(f'"{key}"')
    return text.count("\n", 0, found) + 1 if found >= 0 else None
