"""Skill folders from disk, and what an agent's options need to offer a template's.

``found`` reads the three places ``core.skills`` names (the user's, the project's,
agentdeck's built-ins). A place's folders are hostile input: a skill folder or
SKILL.md that is a symlink, a folder holding a symlink, more than
``MAX_FILES`` files or ``MAX_FOLDER_BYTES`` bytes, a SKILL.md over
``MAX_SKILL_MD`` is listed with its problem and never offered (a skill's files
are read by the agent as its base directory: none may lead out of it).

``for_agent`` turns a template's ``skills`` into the SDK's options: ``skills``
(the names Claude Code lists and its ``Skill`` tool accepts, all others hidden),
the built-ins' plugin folder when one is used (Claude Code 2.1 loads a
``--plugin-dir`` without a manifest and names its skills ``FOLDER:NAME``, tried),
and every setting source (the SDK would otherwise drop ``local``). Claude Code's
init message and ``initialize`` answer still list every skill it found; the
``skills`` option filters what the model is told and what its Skill tool takes
(tests/runner/test_skills.py checks both on the real CLI).
What a skill's scripts do is the agent's Bash calls: the policy and the sandbox
decide them like any other.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentdeck.core.agent_file import AgentFile
from agentdeck.core.quoting import key_shown
from agentdeck.core.skills import (
    BUILTIN_PLUGIN,
    MAX_FILES,
    MAX_FOLDER_BYTES,
    MAX_PER_PLACE,
    MAX_SKILL_MD,
    Skill,
    effective,
    parse_skill,
    resolve_names,
    skill_name_ok,
)
from agentdeck.errors import ConfigError, NotFound
from agentdeck.settings import Settings

if TYPE_CHECKING:
    from claude_agent_sdk.types import AgentDefinition

__all__ = ["BUILTIN_DIR", "SkillOptions", "find_skill", "for_agent", "found", "places"]

# A plugin folder: its name is the prefix Claude Code gives its skills.
BUILTIN_DIR = Path(__file__).parent / "builtin_skills" / BUILTIN_PLUGIN
SKILL_FILE = "SKILL.md"
MAX_DEPTH = 64  # parent directories looked in for .claude/skills


def places(settings: Settings, project: str | Path | None) -> list[tuple[str, Path]]:
    """``(source, folder of skill folders)``, highest first. The project's are
    ``.claude/skills`` in its directory and each parent up to its git repository's
    root, nearest first, or up to ``/`` outside a repository: where Claude Code 2.1
    finds them (tried: a skill above the repository's root is not listed, one above
    a directory outside any repository is)."""
    config = (settings.claude_config_dir or Path("~/.claude")).expanduser()
    user = config / "skills"
    out = [("user", user)]
    if project is not None:
        for folder in _upwards(Path(project).expanduser().absolute()):
            if folder / ".claude" / "skills" != user:
                out.append(("project", folder / ".claude" / "skills"))
    out.append(("built-in", BUILTIN_DIR / "skills"))
    return out


def _upwards(start: Path) -> list[Path]:
    chain = [start, *start.parents][:MAX_DEPTH]
    for i, folder in enumerate(chain):
        if (folder / ".git").exists():
            return chain[: i + 1]
    return chain


def found(settings: Settings, project: str | Path | None) -> list[Skill]:
    """Every skill folder of every place, problems included."""
    skills: list[Skill] = []
    for source, root in places(settings, project):
        skills.extend(_read_place(source, root))
    return skills


def find_skill(settings: Settings, project: str | Path | None, name: str) -> Skill:
    """The skill Claude Code would launch for ``name`` (``agentdeck:NAME`` or a
    plain name), else the first broken one of that name; ``NotFound`` otherwise."""
    every = found(settings, project)
    chosen, _ = effective(every)
    plain = name.rpartition(":")[2]
    skill = chosen.get(name) or (None if ":" in name else chosen.get(f"{BUILTIN_PLUGIN}:{plain}"))
    if skill is None:
        skill = next((s for s in every if name in (s.name, s.qualified)), None)
    if skill is None:
        known = ", ".join(sorted(chosen)) or "none"
        raise NotFound("skill", key_shown(name, ticks=False), hint=f"skills here: {known}")
    return skill


@dataclass(frozen=True)
class SkillOptions:
    """The SDK options a spec's skills need (``skills`` None: Claude Code's defaults)."""

    skills: list[str] | None = None
    plugins: list[dict[str, Any]] = field(default_factory=list)
    setting_sources: list[str] | None = None
    offered: tuple[Skill, ...] = ()
    agents: dict[str, AgentDefinition] | None = None  # the template's subagents


def for_agent(
    claude: AgentFile, settings: Settings, cwd: str | Path, *, source: str = "the template"
) -> SkillOptions:
    """What to pass for ``claude.skills`` and ``claude.subagents`` in ``cwd``;
    ``ConfigError`` naming every skill found nowhere (nothing starts)."""
    wanted = [*claude.skills, *(n for a in claude.subagents for n in a.skills)]
    if not wanted and not claude.subagents:
        return SkillOptions()
    every = found(settings, cwd) if wanted else []
    names, offered, problems = resolve_names(claude.skills, every)
    agents: dict[str, AgentDefinition] = {}
    for agent in claude.subagents:
        theirs, more, wrong = resolve_names(agent.skills, every)
        problems += [f"subagent `{agent.name}`: {why}" for why in wrong]
        offered += more
        agents[agent.name] = _definition({**agent.definition(), "skills": theirs or None})
    if problems:
        raise ConfigError(
            f"{source}: {'; '.join(problems)}",
            hint="`agentdeck skills list` shows the skills an agent here can have",
        )
    builtin = any(s.source == "built-in" for s in offered)
    return SkillOptions(
        skills=names if claude.skills else None,
        plugins=[{"type": "local", "path": str(BUILTIN_DIR)}] if builtin else [],
        # What Claude Code loads without the option; the SDK's default with
        # ``skills`` leaves out ``local`` (.claude/settings.local.json).
        setting_sources=["user", "project", "local"] if claude.skills else None,
        offered=tuple(offered),
        agents=agents or None,
    )


def _definition(fields: dict[str, Any]) -> AgentDefinition:
    from claude_agent_sdk.types import AgentDefinition  # the SDK loads with a Claude Code

    return AgentDefinition(**{k: v for k, v in fields.items() if v is not None})


def _read_place(source: str, root: Path) -> list[Skill]:
    try:
        info = root.lstat()
    except OSError:
        return []
    if source == "project" and (stat.S_ISLNK(info.st_mode) or root.parent.is_symlink()):
        # Model-written: .claude/skills (or .claude) leading elsewhere is not the project's.
        return [Skill("?", source, str(root), problem="the skills folder is a symlink: refused")]
    if not root.is_dir():
        return []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    skills: list[Skill] = []
    for entry in entries[:MAX_PER_PLACE]:
        if entry.name.startswith("."):
            continue
        skills.append(_read_skill(source, Path(entry.path), entry))
    return skills


def _read_skill(source: str, folder: Path, entry: os.DirEntry[str]) -> Skill:
    name = entry.name if skill_name_ok(entry.name) else "?"

    def refused(problem: str) -> Skill:
        return Skill(name, source, str(folder), problem=problem)

    if name == "?":
        return refused(
            f"folder {key_shown(entry.name, ticks=False)} is not a skill's name "
            "(lowercase, digits, hyphens)"
        )
    if entry.is_symlink():
        return refused("the folder is a symlink: a skill's files stay in its folder")
    if not entry.is_dir(follow_symlinks=False):
        return refused("not a folder")
    files, problem = _files(folder)
    if problem is not None:
        return refused(problem)
    if SKILL_FILE not in files:
        return refused("no SKILL.md")
    import yaml  # here: an agent without skills (an early spawn) never loads these

    from agentdeck.core.templates import split_front_matter

    text, problem = _read_text(folder / SKILL_FILE)
    if problem is not None:
        return refused(problem)
    parts = split_front_matter(text)
    if parts is None:
        return refused("SKILL.md has no front matter (---, name, description, ---)")
    try:
        front = yaml.safe_load(parts[0])
    except yaml.YAMLError:
        return refused("SKILL.md's front matter is not YAML")
    ordered = [SKILL_FILE, *sorted(f for f in files if f != SKILL_FILE)]
    return parse_skill(
        name, front, parts[1].strip(), source=source, path=str(folder), files=ordered
    )


def _files(folder: Path) -> tuple[list[str], str | None]:
    """The folder's files, relative; a problem for a symlink or past a cap."""
    files: list[str] = []
    size = 0
    for top, dirs, names in os.walk(folder, followlinks=False):
        for name in [*dirs, *names]:
            path = Path(top, name)
            if path.is_symlink():
                shown = key_shown(str(path.relative_to(folder)), ticks=False)
                return [], f"holds a symlink ({shown}): a skill's files stay in its folder"
        for name in names:
            path = Path(top, name)
            files.append(str(path.relative_to(folder)))
            try:
                size += path.lstat().st_size
            except OSError:
                continue
            if len(files) > MAX_FILES or size > MAX_FOLDER_BYTES:
                return [], (
                    f"more than {MAX_FILES} files or {MAX_FOLDER_BYTES // (1024 * 1024)} MiB: "
                    "not a skill"
                )
    return files, None


def _read_text(path: Path) -> tuple[str, str | None]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return "", f"cannot read SKILL.md ({exc.strerror})"
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return "", "SKILL.md is not a file"
        raw = handle.read(MAX_SKILL_MD + 1)
    if len(raw) > MAX_SKILL_MD:
        return "", f"SKILL.md is larger than {MAX_SKILL_MD // 1024} KiB"
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        return "", "SKILL.md is not UTF-8 text"
