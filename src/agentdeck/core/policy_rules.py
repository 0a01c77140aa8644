"""Permission rules in Claude Code's syntax, and what they are matched against. Pure.

Forms (anything else is refused with a ``PolicyError``):

* ``Tool`` — every use of that tool, and only that tool: a bare ``Edit`` does not
  cover ``Write`` (protocol notes §3.2);
* ``Bash(spec)`` — see below; ``Read(path)`` / ``Edit(path)`` — see
  ``policy_paths``. ``Read`` path rules also judge ``Glob``, ``Grep``, ``LS`` and
  ``NotebookRead``; ``Edit`` path rules judge ``Write``, ``MultiEdit`` and
  ``NotebookEdit``. ``Write(…)``/``Glob(…)``-style path rules are refused, since
  Claude Code never matches them and a silently inert deny would be dangerous;
* ``WebFetch(domain:host)`` — exactly that host (case-insensitive, no
  subdomains, any port), as Claude Code does;
* ``Agent(name)`` / ``Task(name)`` — that subagent type;
* ``Skill(name)`` — that skill (``Skill(agentdeck:run-tests)``); Claude Code also
  takes a plugin's skill by its plain name, so a deny or ask rule catches either
  spelling, an allow rule only the one it names;
* ``mcp__server__tool``, ``mcp__server__*`` and ``mcp__server`` (the whole server).

Bash specifiers are matched against each simple command of the line
(``bash_split``), its words unquoted and joined by single spaces:

* ``prefix:*`` — the prefix, then nothing or a space and anything
  (``Bash(git:*)`` matches ``git`` and ``git status``, not ``gitk``);
* ``a * b`` — ``*`` (unquoted) matches any run of characters, across words; a
  trailing `` *`` also matches nothing (``Bash(ls *)`` matches ``ls``);
* anything else — the whole command, exactly.

A specifier with an unquoted shell operator (``|``, ``&``, ``;``, ``<``, ``>``,
backticks, ``$(``) is refused: it could never match a simple command, and an
inert deny such as ``Bash(curl * | sh)`` would only look safe. Deny the parts
instead (``Bash(sh)``).

Allow rules see a sub-command as written, or without its leading ``VAR=value``
assignments when none of them is risky (``PATH``, ``LD_*``, ``GIT_*``,
``*_COMMAND`` …). They never allow a sub-command whose name is computed
(``$(…)``, ``$VAR``, globs, braces) or which redirects output into a file.
Deny and ask rules see more views, so they cannot be dodged: without
assignments, with the directory stripped from the program (``/bin/rm``), and
behind wrappers such as ``command``, ``exec``, ``env``, ``sudo``, ``nohup``,
``timeout``, ``xargs``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from agentdeck.core.bash_split import SUBST
from agentdeck.core.policy_paths import PathPattern
from agentdeck.errors import PolicyError

EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
READ_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead"})
AGENT_TOOLS = frozenset({"Agent", "Task"})
SKILL_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}(?::[a-z0-9][a-z0-9-]{0,63})?")
_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MCP_NAME = re.compile(r"mcp__[A-Za-z0-9_-]+?(?:__(?:[A-Za-z0-9_-]+|\*))?")
_HOST = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")
_WILD = "\ue000"  # an unquoted `*` while tokenizing a Bash specifier
_PROBE = "\ue002"  # a file name no literal pattern can match


class RuleSyntaxError(ValueError):
    """A malformed rule; ``Rule.parse`` turns it into a ``PolicyError`` with its source."""


@dataclass(frozen=True)
class Unit:
    """One thing a rule is matched against: a Bash sub-command, a path, a host."""

    label: str  # how reasons show it
    allow_texts: tuple[str, ...] = ()
    deny_texts: tuple[str, ...] = ()
    path: str | None = None
    directory: bool = False  # a search (Glob/Grep/LS) of this directory
    host: str | None = None
    value: str | None = None  # Agent/Task: the subagent type


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a rule came from, when not from the profile whose list holds it: the
    agent's own ``--allow`` / ``--deny``, a parent's profile, agentdeck itself.
    ``source`` is what a verdict's ``source`` says; ``wheres`` how its reason
    says where the rule is, per list (allow, ask, deny, disabled_tools)."""

    source: str  # "agent:<id>", "profile:<name>", "agentdeck"
    owner: str  # "agent a1b2", "profile strict, inherited from its parent"
    fixed: str | None = None  # a reason's words whatever the list (the deck's own rules)
    own: bool = False  # an agent's own rules, not a profile's list

    def where(self, kind: str) -> str:
        if self.fixed is not None:
            return self.fixed
        return (
            f"in {self.owner}'s own {kind} rules"
            if self.own
            else f"in the {kind} list of {self.owner}"
        )

    @classmethod
    def agent(cls, agent_id: str) -> Origin:
        """An agent's own rules (``agentdeck run --allow``, the API's ``allow``)."""
        return cls(f"agent:{agent_id}", f"agent {agent_id}", own=True)

    @classmethod
    def inherited(cls, profile: str) -> Origin:
        """A rule of the profile a parent runs under, met into its child's."""
        return cls(f"profile:{profile}", f"profile {profile}, inherited from its parent")

    @classmethod
    def template(cls, name: str) -> Origin:
        """A template's tool list (the tools its agents have)."""
        return cls(f"template:{name}", f"template {name}")

    @classmethod
    def deck(cls, why: str) -> Origin:
        """agentdeck's own rule, ``why`` in a reason's words."""
        return cls("agentdeck", "agentdeck", why)


@dataclass(frozen=True)
class Rule:
    """A parsed rule; equal rules have equal ``text`` (wherever they come from).
    ``origin`` None: the profile whose list holds it."""

    text: str
    tool: str
    specifier: str | None
    _bash: re.Pattern[str] | None = field(default=None, compare=False, repr=False)
    _path: PathPattern | None = field(default=None, compare=False, repr=False)
    origin: Origin | None = field(default=None, compare=False, repr=False)

    def by(self, origin: Origin) -> Rule:
        """This rule, said to come from ``origin``."""
        return replace(self, origin=origin)

    @property
    def is_bare(self) -> bool:
        return self.specifier is None

    @classmethod
    def parse(cls, text: str, *, source: str = "<rule>", line: int | None = None) -> Rule:
        """Parse ``text``; raises ``PolicyError`` naming ``source`` and ``line`` if malformed."""
        try:
            return cls._parse(text)
        except RuleSyntaxError as exc:
            raise PolicyError(source, str(exc), line=line) from None

    @classmethod
    def _parse(cls, text: str) -> Rule:
        t = text.strip()
        if not t:
            raise RuleSyntaxError("empty rule")
        if "(" not in t:
            if ")" in t:
                raise RuleSyntaxError(f"unbalanced parentheses in `{t}`")
            if not (_MCP_NAME.fullmatch(t) if t.startswith("mcp__") else _TOOL_NAME.fullmatch(t)):
                raise RuleSyntaxError(f"`{t}` is not a tool name or `Tool(specifier)`")
            return cls(t, t, None)
        if not t.endswith(")"):
            raise RuleSyntaxError(f"unbalanced parentheses in `{t}`: a rule ends with `)`")
        tool, spec = t[: t.index("(")], t[t.index("(") + 1 : -1]
        if not _TOOL_NAME.fullmatch(tool):
            raise RuleSyntaxError(f"`{tool}` is not a tool name (in `{t}`)")
        if not spec.strip():
            raise RuleSyntaxError(f"empty specifier in `{t}`: write `{tool}` for every use")
        _check_parens(spec, t, quotes=tool == "Bash")
        if tool.startswith("mcp__"):
            raise RuleSyntaxError(f"MCP rules take no specifier (`{t}`)")
        if tool == "Bash":
            return cls(t, tool, spec, _bash=_bash_regex(spec, t))
        if tool in ("Read", "Edit"):
            try:
                return cls(t, tool, spec, _path=PathPattern.parse(spec.strip()))
            except ValueError as exc:
                raise RuleSyntaxError(f"bad path pattern in `{t}`: {exc}") from None
        if tool in EDIT_TOOLS or tool in READ_TOOLS:
            family = "Edit" if tool in EDIT_TOOLS else "Read"
            raise RuleSyntaxError(
                f"`{t}` never matches in Claude Code: path rules for {tool} are written"
                f" `{family}({spec})`"
            )
        if tool == "WebFetch":
            host = spec.strip().removeprefix("domain:").lower().rstrip(".")
            if not spec.strip().startswith("domain:") or not _HOST.fullmatch(host):
                raise RuleSyntaxError(
                    f"unknown WebFetch specifier in `{t}`: write `WebFetch(domain:example.com)`"
                )
            return cls(t, tool, f"domain:{host}")
        if tool in AGENT_TOOLS:
            if not _TOOL_NAME.fullmatch(spec.strip().replace("-", "_")):
                raise RuleSyntaxError(f"`{spec}` is not a subagent name (in `{t}`)")
            return cls(t, tool, spec.strip())
        if tool == "Skill":
            if not SKILL_NAME.fullmatch(spec.strip()):
                raise RuleSyntaxError(f"`{spec}` is not a skill's name (in `{t}`)")
            return cls(t, tool, spec.strip())
        raise RuleSyntaxError(f"`{tool}` rules take no specifier (`{t}`): write `{tool}`")

    def covers_tool(self, tool: str) -> bool:
        """Whether this rule can apply to a call of ``tool`` at all."""
        if self.specifier is None:
            if self.tool == tool:
                return True
            if self.tool.startswith("mcp__") and tool.startswith("mcp__"):
                server = self.tool.removesuffix("__*")
                return server.count("__") == 1 and tool.startswith(server + "__")
            return False
        if self.tool == "Edit":
            return tool in EDIT_TOOLS
        if self.tool == "Read":
            return tool in READ_TOOLS
        if self.tool in AGENT_TOOLS:
            return tool in AGENT_TOOLS
        return self.tool == tool

    def matches(self, tool: str, unit: Unit, *, allow: bool, workspace: str, home: str) -> bool:
        """Whether the rule applies; ``allow`` selects the strict view of allow rules."""
        if not self.covers_tool(tool):
            return False
        if self.specifier is None:
            return True
        if self._bash is not None:
            texts = unit.allow_texts if allow else unit.deny_texts
            return any(self._bash.fullmatch(t) for t in texts)
        if self._path is not None:
            path, where = unit.path, {"workspace": workspace, "home": home}
            if path is None:
                return False
            if self._path.matches(path, **where):
                return True
            if not unit.directory:
                return False
            if allow:  # a search is allowed when the rule covers anything beneath it
                probes = (f"{path}/{_PROBE}", f"{path}/.{_PROBE}/{_PROBE}")
                return all(self._path.matches(p.replace("//", "/"), **where) for p in probes)
            return self._path.reaches_into(path, **where)
        if self.tool == "WebFetch":
            return unit.host is not None and f"domain:{unit.host}" == self.specifier
        if self.tool == "Skill" and not allow and isinstance(unit.value, str):
            # `agentdeck:run-tests` is launched as `run-tests` too: a deny sees both.
            return unit.value.rpartition(":")[2] == self.specifier.rpartition(":")[2]
        return unit.value is not None and unit.value == self.specifier


def _check_parens(spec: str, text: str, *, quotes: bool) -> None:
    depth, quote = 0, ""
    for ch in spec:
        if quotes and ch in "'\"" and quote in ("", ch):
            quote = "" if quote else ch
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
            if depth < 0:
                break
    if depth != 0:
        raise RuleSyntaxError(f"unbalanced parentheses in `{text}`")


def _bash_regex(spec: str, text: str) -> re.Pattern[str]:
    body, prefix = spec.strip(), False
    if body.endswith(":*"):
        body, prefix = body[:-2].rstrip(), True
        if not body:
            raise RuleSyntaxError(f"empty command prefix in `{text}`")
    if ":*" in body:
        raise RuleSyntaxError(f"`:*` may only end a Bash specifier (in `{text}`)")
    words = _spec_words(body, text)
    if not words:
        raise RuleSyntaxError(f"empty specifier in `{text}`")
    if not prefix and len(words) > 1 and words[-1] == _WILD:
        words, prefix = words[:-1], True
    pattern = " ".join(".*".join(re.escape(part) for part in w.split(_WILD)) for w in words)
    return re.compile(pattern + ("(?: .*)?" if prefix else ""), re.DOTALL)


def _spec_words(spec: str, text: str) -> list[str]:
    """Shell-like words of a specifier; unquoted ``*`` becomes ``_WILD``."""
    words: list[str] = []
    cur: list[str] | None = None
    quote, i = "", 0
    while i < len(spec):
        ch = spec[i]
        i += 1
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"' and i < len(spec) and spec[i] in '"\\$`':
                cur = (cur or []) + [spec[i]]
                i += 1
            else:
                cur = (cur or []) + [ch]
        elif ch in "'\"":
            quote, cur = ch, cur or []
        elif ch == "\\" and i < len(spec):
            cur = (cur or []) + [spec[i]]
            i += 1
        elif ch in "|;&<>`" or spec.startswith("$(", i - 1):
            raise RuleSyntaxError(
                f"`{text}` can never match: each simple command of a line is judged on its"
                f" own, so `{ch}` cannot appear in a rule; write one rule per command"
            )
        elif ch.isspace():
            if cur is not None:
                words.append("".join(cur))
            cur = None
        else:
            cur = (cur or []) + [_WILD if ch == "*" else ch]
    if quote:
        raise RuleSyntaxError(f"unbalanced quote in `{text}`")
    if cur is not None:
        words.append("".join(cur))
    if any(SUBST in w for w in words):
        raise RuleSyntaxError(f"unsupported characters in `{text}`")
    return words
