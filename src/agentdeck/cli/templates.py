"""``agentdeck agents list / show / validate``: agent templates.

Templates are Claude Code agent files (``.claude/agents/*.md``) of the project,
the user, and agentdeck's built-in catalog; ``list`` and ``show`` ask the deck (the
daemon's when one runs), ``validate`` checks files here (``agentdeck run --agent
NAME`` starts one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from agentdeck.cli.context import console, console_err, load_settings, run_async
from agentdeck.cli.decks import opened_deck
from agentdeck.core.summary import short
from agentdeck.errors import PolicyError, TemplateError, UsageError

if TYPE_CHECKING:
    from agentdeck.core.knowledge import TemplateCatalog
    from agentdeck.core.templates import Template
    from agentdeck.settings import Settings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
ProjectOpt = Annotated[
    Path | None,
    typer.Option(help="The project whose .claude/agents/ to read (default: this directory)."),
]

agents_app = typer.Typer(
    help="Agent templates: Claude Code agent files (.claude/agents/*.md) of the project, "
    "the user (~/.claude/agents) and the built-in catalog.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(agents_app, name="agents")


def _project(project: Path | None) -> Path:
    return (project or Path.cwd()).expanduser().resolve()


@agents_app.command("list")
def list_templates(project: ProjectOpt = None, as_json: JsonOpt = False) -> None:
    """The templates an agent started here can use; a project's override the user's,
    which override the built-in ones."""
    where = str(_project(project))

    async def go(settings: Settings) -> TemplateCatalog:
        async with opened_deck(settings) as deck:
            return await deck.templates(where)

    found = run_async(go)
    templates = found.templates
    if as_json:
        data = {"templates": [t.to_dict() for t in templates], "invalid": list(found.invalid)}
        console.print_json(json.dumps(data))
        return
    table = Table(box=None, pad_edge=False)
    for col in ("NAME", "FROM", "TOOLS", "DESCRIPTION"):
        table.add_column(col)
    for t in templates:
        name = Text(t.name, style="bold") if t.orchestrator else Text(t.name)
        if t.orchestrator:
            name.append(" (orchestrator)", style="dim")
        table.add_row(name, t.scope, ", ".join(t.tools) or "all", short(t.description, 70))
    console.print(table)
    for message in found.invalid:
        console_err.print(Text(f"invalid, not usable: {message}", style="yellow"))


@agents_app.command("show")
def show_template(
    name: Annotated[str, typer.Argument(help="The template's name.")],
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One template as an agent started here gets it: after the project's, the
    user's and the built-in ones are weighed and its profile has held it; where
    each part comes from, then its prompt."""
    from agentdeck.cli.template_view import resolved

    where = str(_project(project))

    async def go(settings: Settings) -> Template:
        async with opened_deck(settings) as deck:
            return await deck.template(name, where)

    template = run_async(go)
    rows = resolved(template, load_settings(), where)
    if as_json:
        data = {**template.to_dict(), "resolved": {k: {"value": v, "from": f} for k, v, f in rows}}
        console.print_json(json.dumps(data))
        return
    grid = Table.grid(padding=(0, 2))
    for key, value, origin in rows:
        shown = _shown(value)
        grid.add_row(Text(key, style="dim"), Text(shown or "-"), Text(origin, style="dim"))
    console.print(grid)
    console.print()
    console.print(template.prompt, markup=False)


@agents_app.command("validate")
def validate(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="A template file or a directory of them (default: this project's "
            ".claude/agents and your own)."
        ),
    ] = None,
) -> None:
    """Check template files: one line per problem (file, key, what is wrong); exit 2
    if there is any."""
    from agentdeck.orchestration.templates import (
        governed,
        load_template,
        project_agents_dir,
        user_agents_dir,
        with_profile_path,
    )

    settings = load_settings()
    if path is not None:
        path = path.expanduser()
        if not path.exists():
            raise UsageError(f"{path} does not exist")
        files = [path] if path.is_file() else sorted(path.glob("*.md"))
    else:
        dirs = [project_agents_dir(Path.cwd()), user_agents_dir(settings)]
        files = [f for d in dirs if d.is_dir() for f in sorted(d.glob("*.md"))]
    if not files:
        console.print("no template files found")
        return
    problems = 0
    for file in files:
        try:
            template = with_profile_path(load_template(file), _project_of(file))
            template = governed(template, settings)  # what its profile lets it have
        except TemplateError as exc:
            problems += len(exc.problems)
            for problem in exc.problems:
                console.print(Text(str(problem), style="red"))
            continue
        except PolicyError as exc:  # its profile cannot be read: nothing to hold it to
            problems += 1
            console.print(Text(f"{file}: profile: {exc.message}", style="red"))
            continue
        console.print(Text(f"{file}: ok ({template.name})", style="green"))
        for warning in _profile_warnings(template, settings):
            console_err.print(Text(f"{file}: warning: {warning}", style="yellow"))
    if problems:
        console_err.print(f"{problems} problem(s) in {len(files)} file(s)")
        raise typer.Exit(2)


def _shown(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(v if isinstance(v, str) else _part(v) for v in value)
    return "-" if value is None else str(value)


def _part(item: dict[str, Any]) -> str:
    """A hook (``event(matcher): command``) or an MCP server (``name (command)``)."""
    if "event" in item:
        matcher = f"({item['matcher']})" if item.get("matcher") else ""
        return f"{item['event']}{matcher}: {item['command']}"
    config = item.get("config") or {}
    how = config.get("command") or config.get("url") or "configured elsewhere"
    return f"{item['name']} ({how})"


def _project_of(file: Path) -> Path:
    """The project a template file belongs to: the one whose ``.claude/agents/``
    holds it, else this directory."""
    agents = file.resolve().parent
    if agents.name == "agents" and agents.parent.name == ".claude":
        return agents.parent.parent
    return Path.cwd()


def _profile_warnings(template: Template, settings: Settings) -> list[str]:
    """What the template's profile gives beyond the default one: such a template
    is refused as a child of an agent under the default profile."""
    from agentdeck.core.policy_inherit import looser
    from agentdeck.governance.profiles import load_profile

    if template.profile is None:
        return []
    try:
        own, default = load_profile(template.profile), load_profile(settings.profile)
    except PolicyError as exc:
        return [f"profile: {exc.message}"]
    found = looser(own, default)
    if not found:
        return []
    return [
        f"profile {own.name} gives more than the default profile ({default.name}): "
        f"{'; '.join(found)}; an agent under the default cannot start it as a child"
    ]
