"""What a tool call offers to rules (``analyze``), and the rule to remember for it. Pure.

Which input field each tool is judged on:

* ``Bash`` — ``command``, split into simple commands (``bash_split``);
* ``Read`` / ``Edit`` / ``Write`` / ``MultiEdit`` — ``file_path``;
  ``NotebookRead`` / ``NotebookEdit`` — ``notebook_path``;
* ``Glob`` / ``Grep`` / ``LS`` — a search of the directory ``path`` (default: the
  workspace), joined for ``Glob`` with the literal directories that start its
  ``pattern``. Read rules judge that directory: an allow must cover it and all
  beneath it; an anchored deny or ask also catches a search of a directory
  that contains what it names (``Read(~/.ssh/**)`` catches ``Grep`` of ``~``);
* ``WebFetch`` — the host of ``url``; ``Agent`` / ``Task`` — ``subagent_type``;
  ``Skill`` — ``skill``.

An input without the field it is judged on cannot be allowed by a specifier rule.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agentdeck.core.bash_split import SUBST, SimpleCommand, split_command
from agentdeck.core.policy_paths import escape_glob, normalize_path
from agentdeck.core.policy_rules import AGENT_TOOLS, EDIT_TOOLS, SKILL_NAME, Unit
from agentdeck.core.redact_rules import MARK_START
from agentdeck.errors import PolicyError

_SEARCH_TOOLS = frozenset({"Glob", "Grep", "LS"})
_RISKY_VARS = re.compile(
    r"PATH|.*PATH|LD_.*|DYLD_.*|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|IFS|HOME"
    r"|SHELL|PYTHON.*|NODE_OPTIONS|PERL5.*|RUBY.*|GIT_.*|EDITOR|VISUAL|PAGER|MANPAGER"
    r"|.*_ASKPASS|.*JAVA_.*OPTIONS|.*_COMMAND|.*_CMD|.*_PRELOAD|.*_OPTIONS|.*_OPTS"
)
_WRAPPERS = frozenset(
    {"command", "builtin", "exec", "nohup", "time", "env", "nice", "timeout", "stdbuf", "sudo",
     "doas", "xargs", "ionice", "setsid"}
)  # fmt: skip
_VALUE_OPTIONS = frozenset({"-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-D", "-n", "-s", "-k"})
_DURATION = re.compile(r"[0-9.]+[smhd]?")
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9_.:-]*")


@dataclass(frozen=True)
class Subject:
    tool: str
    units: tuple[Unit, ...]
    problem: str | None = None  # set when the input cannot be judged with confidence


def analyze(tool: str, tool_input: Mapping[str, Any], *, workspace: str, home: str) -> Subject:
    """The units of a call that rules are matched against."""
    if tool == "Bash":
        command = tool_input.get("command")
        if not isinstance(command, str):
            return Subject(tool, (), "the input has no `command` string")
        split = split_command(command)
        return Subject(tool, tuple(_bash_unit(c) for c in split.commands), split.problem)
    if tool in EDIT_TOOLS or tool in ("Read", "NotebookRead"):
        key = "notebook_path" if tool.startswith("Notebook") else "file_path"
        raw = tool_input.get(key)
        if not isinstance(raw, str) or not raw:
            return Subject(tool, (), f"the input has no `{key}` string")
        path = normalize_path(raw, workspace=workspace, home=home)
        return Subject(tool, (Unit(label=path, path=path),))
    if tool in _SEARCH_TOOLS:
        raw = tool_input.get("path") or workspace
        if not isinstance(raw, str):
            return Subject(tool, (), "the input's `path` is not a string")
        pattern = tool_input.get("pattern")
        if tool == "Glob" and isinstance(pattern, str):
            lead = []
            for seg in pattern.split("/")[:-1]:
                if any(ch in seg for ch in "*?[{\\"):
                    break
                lead.append(seg)
            if lead:
                joined = "/".join(lead) or "/"
                raw = joined if joined.startswith(("/", "~")) else f"{raw}/{joined}"
        path = normalize_path(raw, workspace=workspace, home=home)
        return Subject(tool, (Unit(label=path, path=path, directory=True),))
    if tool == "WebFetch":
        url = tool_input.get("url")
        host = _host(url) if isinstance(url, str) else None
        if host is None:
            return Subject(tool, (), "the input has no `url` with a host")
        return Subject(tool, (Unit(label=host, host=host),))
    if tool in AGENT_TOOLS:
        kind = tool_input.get("subagent_type")
        return Subject(tool, (Unit(label=f"{tool} {kind}", value=kind),))
    if tool == "Skill":
        name = tool_input.get("skill")
        if not isinstance(name, str) or not SKILL_NAME.fullmatch(name.strip()):
            return Subject(tool, (Unit(label=tool),), "the input has no `skill` name")
        return Subject(tool, (Unit(label=f"Skill {name.strip()}", value=name.strip()),))
    return Subject(tool, (Unit(label=tool),))


def _host(url: str) -> str | None:
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    return host.rstrip(".").lower() if host else None


def _bash_unit(command: SimpleCommand) -> Unit:
    words = command.words
    deny = [command.text, *_views(list(words))]
    allow: tuple[str, ...] = ()
    if not (command.dynamic_name or command.writes_file):
        allow = (command.text,)
        harmless = not any(_RISKY_VARS.fullmatch(a.split("=", 1)[0]) for a in command.assignments)
        if command.assignments and words and harmless:
            allow += (command.bare_text,)
    label = " ".join(_shown(w) for w in (*command.assignments, *words))
    return Unit(label=label, allow_texts=allow, deny_texts=tuple(dict.fromkeys(deny)))


def _shown(word: str) -> str:
    """A word as a reason shows it: quoted as the shell would read it back, so a
    value keeps what ends it (``-H 'Authorization: Bearer …'``) and the scrubber
    reads the argument as written, not words run together."""
    if word == SUBST:
        return "$(…)"
    return shlex.quote(word).replace(SUBST, "$(…)")


def _views(words: list[str]) -> list[str]:
    """The command as deny rules should also see it: bare program name, unwrapped."""
    out: list[str] = []
    for _ in range(8):
        if not words:
            break
        out.append(" ".join(words))
        name = words[0].rsplit("/", 1)[-1]
        if name != words[0] and name:
            words = [name, *words[1:]]
            out.append(" ".join(words))
        if name not in _WRAPPERS:
            break
        rest = words[1:]
        while rest and (rest[0].startswith("-") or "=" in rest[0] or _DURATION.fullmatch(rest[0])):
            skip = 2 if rest[0] in _VALUE_OPTIONS and len(rest) > 1 else 1
            rest = rest[skip:]
        words = rest
    return out


def rules_for(
    tool: str, tool_input: Mapping[str, Any], workspace: str, *, home: str | None = None
) -> tuple[str, ...]:
    """One rule per distinct sub-command of a Bash line; for other tools, ``rule_for``."""
    if tool != "Bash":
        return (rule_for(tool, tool_input, workspace, home=home),)
    command = tool_input.get("command")
    split = split_command(command) if isinstance(command, str) else None
    if split is None or split.problem is not None:
        problem = split.problem if split else "no `command` string"
        raise PolicyError("rule_for", f"no rule can be remembered for this command: {problem}")
    return tuple(dict.fromkeys(_bash_rule(c) for c in split.commands))


def rule_for(
    tool: str, tool_input: Mapping[str, Any], workspace: str, *, home: str | None = None
) -> str:
    """The narrowest sensible rule to remember for an approved call ("approve --always").

    Bash: the program and up to two sub-command words, as a prefix
    (``npm run test -- -x`` → ``Bash(npm run test:*)``); when the next word is an
    option or a path, the exact command (``rm -rf build`` → ``Bash(rm -rf build)``);
    for a compound line, the first simple command (see ``rules_for``). Files: the
    exact path (``Edit(/src/a.py)``, ``Read(~/notes.md)``, ``Read(//etc/hosts)``);
    a searched directory with all beneath it (``Read(/src/)``). WebFetch: the host.
    Other tools, MCP tools included: the tool name. Raises ``PolicyError`` when no
    rule could allow the call (an unparseable command, a computed program name), or
    when the rule would hold a redacted secret: an approval request shows its call
    scrubbed, and a rule made of that would never match the real call again (made
    of the real one, it would keep the secret on disk).
    """
    rule = _rule_for(tool, tool_input, workspace, home=home or "/nonexistent-home")
    if MARK_START in rule:
        raise PolicyError(
            "rule_for", "no rule can be remembered: the call holds a secret, shown redacted"
        )
    return rule


def _rule_for(tool: str, tool_input: Mapping[str, Any], workspace: str, *, home: str) -> str:
    if tool == "Bash":
        return rules_for(tool, tool_input, workspace, home=home)[0]
    subject = analyze(tool, tool_input, workspace=workspace, home=home)
    if subject.problem is not None:
        raise PolicyError("rule_for", f"no rule can be remembered: {subject.problem}")
    unit = subject.units[0]
    if unit.path is not None:
        family = "Edit" if tool in EDIT_TOOLS else "Read"
        return f"{family}({_path_spec(unit.path, unit.directory, workspace, home)})"
    if unit.host is not None:
        return f"WebFetch(domain:{unit.host})"
    if unit.value is not None and isinstance(unit.value, str):
        return f"{tool}({unit.value})"
    return tool


def _path_spec(path: str, directory: bool, workspace: str, home: str) -> str:
    ws = normalize_path(workspace, workspace="/", home=home)
    for prefix, anchor in ((ws, "/"), (normalize_path(home, workspace="/", home=home), "~/")):
        if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
            rel = path[len(prefix) :].lstrip("/")
            if not rel:
                return f"{anchor}**"
            return f"{anchor}{escape_glob(rel)}{'/' if directory else ''}"
    if path == "/":
        return "//**"
    return f"//{escape_glob(path[1:])}{'/' if directory else ''}"


def _bash_rule(command: SimpleCommand) -> str:
    words = command.words
    if command.dynamic_name or command.writes_file or not words:
        why = (
            "it redirects output into a file" if command.writes_file else "its program is computed"
        )
        raise PolicyError("rule_for", f"no rule can allow `{command.text}`: {why}")
    keep = [words[0]]
    for word in words[1:3]:
        if not _SUBCOMMAND.fullmatch(word):
            break
        keep.append(word)
    if len(keep) > 1 or len(words) == 1:
        return f"Bash({_quote(keep)}:*)"
    return f"Bash({_quote(list(words))})"


def _quote(words: Sequence[str]) -> str:
    if any(SUBST in w for w in words):
        raise PolicyError("rule_for", "no rule can match the output of a command substitution")
    return " ".join(w if re.fullmatch(r"[\w@%+=,./-]+", w) else shlex.quote(w) for w in words)
