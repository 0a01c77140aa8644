"""Deny rules for the deck's own secrets, added to every profile. Pure.

agentdeck's home (its API token, its database, tool outputs kept in ``payloads/``,
logs, notification secrets: whatever ``AGENTDECK_HOME`` is) and Claude Code's
credentials (``.credentials.json`` in its config directory) are never an agent's
to read or write, whatever its profile says and whatever its sandbox: with the
sandbox off, or in ``bash`` mode, these rules are what stands between a hostile
model and the deck's token. The Governor puts them before every profile's own
deny rules, so a profile cannot forget them.

* File tools (Read, Grep, Glob, LS, NotebookRead; Edit, Write, MultiEdit,
  NotebookEdit) are denied any path in a protected place, and a search of a
  directory that contains one. An agent's own workspace may sit in the home
  (``workspaces/<id>``, ``worktrees/<id>``): the paths in it stay its own.
* Bash commands are denied when their text names a protected place: its absolute
  path (or that path without its leading ``/``), ``~/…``, ``$HOME/…`` or
  ``${HOME}/…`` forms, a ``.credentials.json``, and the home's well-known entries
  after its directory's name (``.agentdeck/token``). A path the model computes
  (``python -c "open(...)"``, a variable) is out of reach of any rule: the
  sandbox hides the home from a confined agent.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from agentdeck.core.policy_rules import EDIT_TOOLS, READ_TOOLS, Origin, Rule, Unit

CREDENTIALS = ".credentials.json"
# What the home holds that a command may name from its parent directory.
HOME_ENTRIES = (
    "token", "agentdeck.db", "payloads", "logs", "notify.yaml", "hooks.json",
    "bridges", "checkpoints", "daemon.json", "daemon.sock", "users",
)  # fmt: skip
_NONE = re.compile("(?!)")  # a search that finds nothing
WHY = "(agentdeck's own files and Claude Code's credentials are never an agent's)"
ORIGIN = Origin.deck(WHY)  # whatever profile they are added to


@dataclass(frozen=True)
class SecretRule(Rule):
    """A deny rule over protected places, matched as the module doc says."""

    places: tuple[str, ...] = ()  # absolute, normalized
    names: tuple[str, ...] = ()  # what a Bash command may call them
    owner_home: str = "/"  # the user's home, for ``~`` forms
    _any_name: re.Pattern[str] = field(init=False, compare=False, repr=False, default=_NONE)

    def __post_init__(self) -> None:
        # One search for all the names (``any(name in text …)``, some 15 of them, was
        # the deck's secrets' cost on every Bash call).
        if self.names:
            found = re.compile("|".join(map(re.escape, self.names)))
            object.__setattr__(self, "_any_name", found)

    def covers_tool(self, tool: str) -> bool:
        if self.tool == "Read":
            return tool in READ_TOOLS
        if self.tool == "Edit":
            return tool in EDIT_TOOLS
        return tool == self.tool

    def matches(self, tool: str, unit: Unit, *, allow: bool, workspace: str, home: str) -> bool:
        if allow or not self.covers_tool(tool):
            return False
        if unit.path is not None:
            return any(
                self._hides(unit.path, unit.directory, place, workspace) for place in self.places
            )
        if tool == "Bash":
            if not any(_own(workspace, place, workspace) for place in self.places):
                # The workspace is not in the home (as a rule): only the names count.
                return any(self._any_name.search(text) for text in unit.deny_texts)
            return any(self._named(text, workspace) for text in unit.deny_texts)
        return False

    def _hides(self, path: str, directory: bool, place: str, workspace: str) -> bool:
        if _within(path, place):
            return not _own(path, place, workspace)
        # A search of a directory that holds the place reaches into it.
        return directory and _within(place, path)

    def _named(self, text: str, workspace: str) -> bool:
        for place in self.places:
            if _own(workspace, place, workspace):
                # Its own workspace is in the home: its paths are not the home's.
                for form in _forms(workspace, self.owner_home):
                    text = text.replace(form, "\0")
                if "\0/.." in text:  # climbing out of it names the home again
                    return True
        return self._any_name.search(text) is not None


def _within(path: str, place: str) -> bool:
    return path == place or path.startswith(place.rstrip("/") + "/")


def _own(path: str, place: str, workspace: str) -> bool:
    """Whether ``path`` is in a workspace that lies strictly inside ``place``."""
    return workspace != place and _within(workspace, place) and _within(path, workspace)


def _forms(path: str, owner_home: str) -> list[str]:
    """How a command may write an absolute ``path``."""
    forms = [path, path.lstrip("/")]
    if owner_home != "/" and _within(path, owner_home) and path != owner_home:
        rel = path[len(owner_home.rstrip("/")) + 1 :]
        forms += [f"~/{rel}", f"$HOME/{rel}", f"${{HOME}}/{rel}"]
    return forms


def secret_rules(*, home: str, claude_config: str, user_home: str) -> tuple[Rule, ...]:
    """The deny rules (Read, Edit, Bash) for agentdeck's ``home`` and the
    credentials in ``claude_config``; every path absolute."""
    home, user_home = _norm(home), _norm(user_home)
    credentials = posixpath.join(_norm(claude_config), CREDENTIALS)
    base = posixpath.basename(home)
    home_names = [*_forms(home, user_home), *(f"{base}/{entry}" for entry in HOME_ENTRIES)]
    rules: list[Rule] = []
    for place, shown, names in (
        (home, f"//{home.lstrip('/')}/**", home_names),
        (
            credentials,
            f"//{credentials.lstrip('/')}",
            [*_forms(credentials, user_home), CREDENTIALS],
        ),
    ):
        for tool, spec in (("Read", shown), ("Edit", shown), ("Bash", f"*{place}*")):
            rules.append(
                SecretRule(
                    text=f"{tool}({spec})",
                    tool=tool,
                    specifier=spec,
                    places=(place,),
                    names=tuple(dict.fromkeys(names)),
                    owner_home=user_home,
                    origin=ORIGIN,
                )
            )
    return tuple(rules)


def _norm(path: str) -> str:
    return "/" + posixpath.normpath(path).lstrip("/")
