"""``agentdeck policy``: ask the policy engine about a tool call, list profiles."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentdeck.cli import verdict
from agentdeck.cli.context import console

if TYPE_CHECKING:
    from agentdeck.core.knowledge import ProfileSummary
    from agentdeck.core.policy_replay import PolicyReplay
    from agentdeck.settings import Settings

policy_app = typer.Typer(
    help=(
        "Ask the policy engine. `agentdeck policy check 'Bash(rm -rf build)'` prints the"
        " decision, its reason and the rule that made it (exit 0 allow, 1 deny, 3 ask,"
        " 2 bad usage); `agentdeck policy profiles` lists the built-in profiles."
    ),
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")


@policy_app.command("check")
def check(
    call: Annotated[
        str | None,
        typer.Argument(
            help="The call as `Tool(argument)`, e.g. 'Bash(git status)'.", show_default=False
        ),
    ] = None,
    tool: Annotated[
        str | None, typer.Option("--tool", help="The tool name (instead of CALL).")
    ] = None,
    input_json: Annotated[
        str | None,
        typer.Option("--input", help='The tool input as JSON, e.g. \'{"command": "ls"}\'.'),
    ] = None,
    profile: Annotated[
        str, typer.Option(help="A built-in profile name, a profile YAML or a settings.json.")
    ] = "default",
    cwd: Annotated[
        Path | None, typer.Option(help="The agent's workspace (default: the current directory).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    """Judge one tool call under a profile: exit 0 allow, 1 deny, 3 ask (2: bad usage).

    Give the call as `Tool(argument)` — the argument is the command for Bash, the
    file path for Read/Edit/Write, the URL for WebFetch — or as --tool and --input.
    """
    raise typer.Exit(verdict.judge(call, tool, input_json, profile, cwd, as_json))


@policy_app.command("profiles")
def profiles() -> None:
    """List the built-in profiles and their default decisions."""
    from agentdeck.cli.context import run_async
    from agentdeck.cli.decks import opened_deck

    async def go(settings: Settings) -> list[ProfileSummary]:
        async with opened_deck(settings) as deck:
            return await deck.policy_profiles()

    for p in run_async(go):
        console.print(f"{p.name}\tdefault {p.default}\t{p.description}", markup=False)


@policy_app.command("replay")
def replay(
    profile: Annotated[
        str,
        typer.Option(
            "--profile",
            help="The candidate: a built-in profile name, a profile YAML or a settings.json.",
            show_default=False,
        ),
    ],
    since: Annotated[
        str | None,
        typer.Option(help="Only the calls of the last period: 30m, 24h, 7d, 2w (default: all)."),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Only this agent's calls (id, prefix or name).")
    ] = None,
    project: Annotated[
        Path | None,
        typer.Option("--project", help="Only the calls of agents working in this directory."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Policy what-if on history: re-decide every tool call in the event log under a
    candidate profile and list the calls whose decision would change (allow→deny,
    ask→allow, …), grouped by the rule that decides now, with counts and examples.

    The decision then is the one the log recorded; the new one comes from the
    policy engine the governor uses, with each agent's own rules and workspace.
    No model runs and nothing changes.
    """
    from agentdeck.cli import out
    from agentdeck.cli.context import run_async
    from agentdeck.cli.decks import opened_deck
    from agentdeck.core.usage import parse_since
    from agentdeck.errors import UsageError

    if agent and project:
        raise UsageError("give --agent or --project, not both")
    seconds = parse_since(since) if since else None
    name, text = _candidate(profile)
    where = str(project.expanduser().resolve()) if project else None

    async def go(settings: Settings) -> PolicyReplay:
        async with opened_deck(settings) as deck:
            return await deck.policy_replay(
                name, profile_text=text, since_seconds=seconds, agent=agent, project=where
            )

    found = run_async(go)
    if as_json:
        out.print_json(found.to_dict())
        return
    for line in report_lines(found):
        out.say(line)


def _candidate(profile: str) -> tuple[str, str | None]:
    """A built-in's name as it is; a file's text, read here (the operator's file:
    the deck reads no file for a caller)."""
    from agentdeck.core.policy_replay import MAX_PROFILE_TEXT
    from agentdeck.core.profile_ref import names_a_file
    from agentdeck.errors import PolicyError

    if not names_a_file(profile):
        return profile, None
    path = Path(profile).expanduser()
    try:
        data = path.read_bytes()[: MAX_PROFILE_TEXT + 1]
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PolicyError(profile, "not UTF-8 text: not a profile") from None
    except OSError as exc:
        raise PolicyError(profile, f"cannot read the profile: {exc.strerror or exc}") from None
    return str(path), text


def report_lines(found: PolicyReplay) -> list[str]:
    """The report for a person: totals, each group with its examples, what was not
    re-decided and what the re-decision assumed."""
    from datetime import UTC, datetime

    window = (
        f"since {datetime.fromtimestamp(found.since, UTC):%Y-%m-%d %H:%M} UTC"
        if found.since is not None
        else "in all the history"
    )
    whose = f", agent {found.agent_id}" if found.agent_id else ""
    whose += f", project {found.project}" if found.project else ""
    lines = [
        f"profile {found.profile} ({found.profile_source}), the calls {window}{whose}",
        f"{found.calls} tool calls: {found.changed} would change, {found.unchanged} unchanged,"
        f" {found.calls - found.redecided} not re-decided",
    ]
    for g in found.groups:
        rule = f"rule `{g.rule}`" if g.rule else "no rule (the profile's default or tool list)"
        lines.append("")
        lines.append(f"{g.change}  {g.count}  {rule}  [{g.source}]")
        for e in g.examples:
            then = f"; then asked, answered {e.answered}" if e.answered else ""
            lines.append(f"    {e.agent_id}  {e.tool} {e.input}")
            lines.append(f"        {e.reason}  (ran under {e.profile}{then})")
    if found.undecided:
        lines.append("")
        lines.append("not re-decided:")
        lines.extend(f"    {n}  {why}" for why, n in found.undecided)
    lines.append("")
    lines.extend(f"note: {n}" for n in found.notes)
    return lines
