"""Skills: folders (``SKILL.md`` and the files it uses) Claude Code offers an agent
by name through its ``Skill`` tool. Pure: ``runner.skills`` reads the folders.

Where they come from, as Claude Code itself looks (2.1, tried with the real CLI):

* the user's — ``$CLAUDE_CONFIG_DIR/skills/NAME`` (``~/.claude/skills``);
* the project's — ``.claude/skills/NAME`` in the agent's directory and each parent
  up to its git repository's root, the nearest first (``runner.skills.places``);
* agentdeck's built-ins — a plugin folder in the package, passed as a plugin
  directory: Claude Code names them ``agentdeck:NAME``, so they never clash.

A name both the user and the project have is the user's: Claude Code launches the
user's SKILL.md then (tried), so ``resolve`` and the listing say the same.

A SKILL.md may be model-written (an agent can write its project's
``.claude/skills`` where no sandbox protects it): names are plain words, sizes are
bounded, the description is shown only without control characters, and a skill
that breaks a rule is listed with its problem and never offered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentdeck.core.agent_file import SKILL_NAME

__all__ = [
    "BUILTIN_PLUGIN",
    "OFFERED",
    "SOURCES",
    "Skill",
    "effective",
    "offered",
    "parse_skill",
    "resolve_names",
    "skill_name_ok",
]

SOURCES = ("user", "project", "built-in")  # highest first, as Claude Code picks
BUILTIN_PLUGIN = "agentdeck"  # Claude Code's name for the built-ins' plugin folder
PLAIN_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
MAX_SKILL_MD = 32 * 1024  # bytes of one SKILL.md
MAX_DESCRIPTION = 1024
MAX_FILES = 200  # files in one skill's folder
MAX_FOLDER_BYTES = 8 * 1024 * 1024
MAX_PER_PLACE = 256  # skill folders read from one place
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # NUL, escapes…: a line or tab passes


@dataclass(frozen=True)
class Skill:
    """One skill folder as found; ``problem`` set: it is never offered."""

    name: str
    source: str  # one of SOURCES
    path: str  # the folder
    description: str = ""
    files: tuple[str, ...] = ()  # relative to the folder, SKILL.md first
    body: str = ""  # SKILL.md after its front matter
    problem: str | None = None

    @property
    def qualified(self) -> str:
        """The name Claude Code lists and its ``Skill`` tool takes."""
        return f"{BUILTIN_PLUGIN}:{self.name}" if self.source == "built-in" else self.name

    def to_dict(self, *, body: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "qualified": self.qualified,
            "source": self.source,
            "path": self.path,
            "description": self.description,
            "files": list(self.files),
            "problem": self.problem,
        }
        if body:
            out["body"] = self.body
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Skill:
        return cls(
            name=str(data["name"]),
            source=str(data["source"]),
            path=str(data["path"]),
            description=str(data.get("description") or ""),
            files=tuple(data.get("files") or ()),
            body=str(data.get("body") or ""),
            problem=data.get("problem"),
        )


def skill_name_ok(name: str) -> bool:
    """A folder name that can be a skill's: a plain word (no path, no dot)."""
    return bool(PLAIN_NAME.fullmatch(name))


def parse_skill(
    folder: str, front: Any, body: str, *, source: str, path: str, files: Sequence[str]
) -> Skill:
    """The skill of folder ``folder`` from its SKILL.md's parsed front matter and
    body; a broken rule is the skill's ``problem``."""
    skill = Skill(name=folder, source=source, path=path, files=tuple(files), body=body)
    if not isinstance(front, Mapping):
        return replace(skill, body="", problem="SKILL.md's front matter is not a mapping")
    name = front.get("name", folder)
    if name != folder:
        return replace(
            skill,
            body="",
            problem="SKILL.md's `name` differs from its folder's name; make them one",
        )
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        return replace(skill, body="", problem="SKILL.md has no `description` (when to use it)")
    if len(description) > MAX_DESCRIPTION or _CONTROL.search(description):
        return replace(
            skill,
            body="",
            problem=f"its description is over {MAX_DESCRIPTION} characters or holds "
            "control characters",
        )
    if _CONTROL.search(body):
        return replace(skill, body="", problem="SKILL.md holds control characters (NUL, escapes…)")
    return replace(skill, description=" ".join(description.split()))


def effective(found: Iterable[Skill]) -> tuple[dict[str, Skill], list[Skill]]:
    """``({qualified name: skill}, shadowed)``: for each name the one Claude Code
    launches (the first place of ``SOURCES``); skills with a problem are left out."""
    rank = {source: i for i, source in enumerate(SOURCES)}
    chosen: dict[str, Skill] = {}
    shadowed: list[Skill] = []
    for skill in sorted(found, key=lambda s: (rank.get(s.source, len(rank)), s.name)):
        if skill.problem is not None:
            continue
        if skill.qualified in chosen:
            shadowed.append(skill)
        else:
            chosen[skill.qualified] = skill
    return chosen, shadowed


def resolve_names(
    names: Sequence[str], found: Iterable[Skill]
) -> tuple[list[str], list[Skill], list[str]]:
    """``(names for Claude Code, skills found, problems)`` for a template's
    ``skills``: a plain name is the user's or the project's, else agentdeck's
    built-in of that name; ``agentdeck:NAME`` a built-in; another ``plugin:NAME``
    is an installed plugin's, passed on as it is (Claude Code finds it or not)."""
    every = list(found)
    chosen, _ = effective(every)
    out: list[str] = []
    skills: list[Skill] = []
    problems: list[str] = []
    for name in names:
        if not SKILL_NAME.fullmatch(name):
            problems.append("a skill is named by a plain word (lowercase, digits, hyphens)")
            continue
        plugin, _, plain = name.rpartition(":")
        if plugin and plugin != BUILTIN_PLUGIN:
            out.append(name)
            continue
        skill = (
            chosen.get(name)
            if plugin
            else chosen.get(name) or chosen.get(f"{BUILTIN_PLUGIN}:{plain}")
        )
        if skill is None:
            broken = next((s for s in every if s.problem and name in (s.name, s.qualified)), None)
            problems.append(
                f"skill `{name}` ({broken.source}: {broken.path}) is refused: {broken.problem}"
                if broken is not None
                else f"skill `{name}` is found nowhere (the user's skills, the project's "
                ".claude/skills, agentdeck's built-ins)"
            )
            continue
        out.append(skill.qualified)
        skills.append(skill)
    return list(dict.fromkeys(out)), skills, problems


# Where an agent's row keeps the skills it was offered (its ``extra``), and how many.
OFFERED = "skills"
MAX_OFFERED = 100


def offered(init: Mapping[str, Any], wanted: Sequence[str]) -> list[str]:
    """The skills Claude Code offered an agent, from its ``init`` message: the
    names it lists, kept to those the template's ``skills`` (``wanted``) let
    through (a plain name: the user's or the project's, else the built-in of
    that name; Claude Code's init lists every skill it found, the ``skills``
    option filters what the model is told). None without the ``Skill`` tool.
    The list is Claude Code's reading of folders a model may have written: only
    skill names (plain words, one ``plugin:`` prefix) are kept, at most
    ``MAX_OFFERED``."""
    tools, listed = init.get("tools"), init.get("skills")
    if not isinstance(listed, list) or (isinstance(tools, list) and "Skill" not in tools):
        return []
    names = [n for n in dict.fromkeys(listed) if isinstance(n, str) and SKILL_NAME.fullmatch(n)]
    if wanted:
        present = set(names)
        chosen = []
        for name in wanted:
            plain = ":" not in name
            builtin = f"{BUILTIN_PLUGIN}:{name}"
            if name in present:
                chosen.append(name)
            elif plain and builtin in present:
                chosen.append(builtin)
        names = list(dict.fromkeys(chosen))
    return names[:MAX_OFFERED]
