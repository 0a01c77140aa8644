"""``agentdeck skills list|show``: the skill folders an agent started here can be
given (a template's ``skills:``), read from this machine's disk as Claude Code
reads them: the user's, the project's ``.claude/skills``, agentdeck's built-ins."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from agentdeck.cli.context import console, console_err, load_settings
from agentdeck.core.summary import short

if TYPE_CHECKING:
    from agentdeck.core.skills import Skill

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
ProjectOpt = Annotated[
    Path | None,
    typer.Option(help="The project whose .claude/skills/ to read (default: this directory)."),
]

skills_app = typer.Typer(
    help="Skills: folders with a SKILL.md that a template's `skills:` gives an agent "
    "(the user's ~/.claude/skills, the project's .claude/skills, agentdeck's built-ins).",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(skills_app, name="skills")


def _project(project: Path | None) -> Path:
    return (project or Path.cwd()).expanduser().resolve()


@skills_app.command("list")
def list_skills(project: ProjectOpt = None, as_json: JsonOpt = False) -> None:
    """Every skill an agent started here can be given, by the name a template
    uses; a name both the user and the project have is the user's (as Claude
    Code picks it). Broken folders are listed with their problem, never offered."""
    from agentdeck.core.skills import effective
    from agentdeck.runner.skills import found

    every = found(load_settings(), _project(project))
    chosen, shadowed = effective(every)
    broken = [s for s in every if s.problem is not None]
    if as_json:
        data = {
            "skills": [s.to_dict() for s in chosen.values()],
            "shadowed": [s.to_dict() for s in shadowed],
            "invalid": [s.to_dict() for s in broken],
        }
        console.print_json(json.dumps(data))
        return
    table = Table(box=None, pad_edge=False)
    for col in ("NAME", "FROM", "FILES", "DESCRIPTION"):
        table.add_column(col)
    for skill in chosen.values():
        table.add_row(
            Text(skill.qualified), skill.source, str(len(skill.files)), short(skill.description, 70)
        )
    console.print(table)
    for skill in shadowed:
        console_err.print(
            Text(f"shadowed: {skill.source} {skill.path} (the {skill.name} above wins)", "dim")
        )
    for skill in broken:
        console_err.print(Text(f"invalid, not offered: {skill.path}: {skill.problem}", "yellow"))


@skills_app.command("show")
def show_skill(
    name: Annotated[str, typer.Argument(help="The skill's name (NAME or agentdeck:NAME).")],
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One skill as an agent started here gets it: where it comes from, its
    files, then its SKILL.md's instructions."""
    from agentdeck.runner.skills import find_skill

    skill: Skill = find_skill(load_settings(), _project(project), name)
    if as_json:
        console.print_json(json.dumps(skill.to_dict(body=True)))
        return
    grid = Table.grid(padding=(0, 2))
    rows = [
        ("name", skill.qualified),
        ("from", f"{skill.source}: {skill.path}"),
        ("description", skill.description or "-"),
        ("files", ", ".join(skill.files) or "-"),
    ]
    if skill.problem is not None:
        rows.append(("problem", f"{skill.problem} (never offered)"))
    for key, value in rows:
        grid.add_row(Text(key, style="dim"), Text(value))
    console.print(grid)
    if skill.body:
        console.print()
        console.print(skill.body, markup=False, highlight=False)
