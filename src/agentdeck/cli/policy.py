"""``agentdeck policy``: ask the policy engine about a tool call, list profiles."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentdeck.cli import verdict
from agentdeck.cli.context import console

if TYPE_CHECKING:
    from agentdeck.core.knowledge import ProfileSummary
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
