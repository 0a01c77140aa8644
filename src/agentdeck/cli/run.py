"""``agentdeck run``: one agent, live progress, exit code from its result."""

from __future__ import annotations

from typing import Annotated

import typer

from agentdeck.cli import remote


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    prompt: Annotated[str, typer.Argument(help="What the agent should do.")],
    name: Annotated[str | None, typer.Option(help="A display name.")] = None,
    cwd: Annotated[
        str | None,
        typer.Option(help="Working directory (default: a fresh workspace under AGENTDECK_HOME)."),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name or alias.")] = None,
    allow: Annotated[
        list[str] | None,
        typer.Option("--allow", help="Allow rule in Claude Code syntax, e.g. 'Bash(pytest *)'."),
    ] = None,
    deny: Annotated[list[str] | None, typer.Option("--deny", help="Deny rule.")] = None,
    append_system_prompt: Annotated[
        str | None, typer.Option(help="Appended to Claude Code's own system prompt.")
    ] = None,
    max_turns: Annotated[int | None, typer.Option(min=1, help="Most model turns.")] = None,
    budget_usd: Annotated[float | None, typer.Option(min=0.0, help="Most USD to spend.")] = None,
    scenario: Annotated[
        str | None,
        typer.Option(
            help="Play a scripted-model scenario (a "
            "shipped name or a YAML file) instead of "
            "calling a real model."
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            help="Policy profile: default, strict, permissive, or a YAML/settings.json file."
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="An agent template (.claude/agents/NAME.md of this project or yours, or a "
            "built-in one: orchestrator, engineer, reviewer, tester, researcher); the options "
            "above override its settings.",
        ),
    ] = None,
    output_schema: Annotated[
        str | None,
        typer.Option(
            "--output-schema",
            help="The agent's final result must match this JSON Schema: `status` "
            "(COMPLETE/PARTIAL/FAILED + summary) or a JSON file; show prints it.",
        ),
    ] = None,
    worktree: Annotated[
        bool,
        typer.Option(
            "--worktree",
            help="Work in a git worktree of the repository of --cwd (or of where the command "
            "runs), on a new branch agentdeck/<name>-<id>; see `agentdeck diff`.",
        ),
    ] = False,
    base: Annotated[
        str | None,
        typer.Option(help="With --worktree: the ref to start from (default: the current branch)."),
    ] = None,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="Record its model traffic (scrubbed) through agentdeck's recording proxy "
            "into a cassette; see `agentdeck recordings`.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
) -> None:
    """Run one agent to the end of its turn; exit 0 on success, 1 if it ended in error.

    SIGTERM or SIGHUP stops it with its agent's processes (the agent is left
    interrupted) and exits 128+signal."""
    spec = remote.run_spec(
        prompt, name=name, cwd=cwd, model=model, allow=allow, deny=deny,
        append_system_prompt=append_system_prompt, max_turns=max_turns,
        budget_usd=budget_usd, scenario=scenario, profile=profile, worktree=worktree, base=base,
        output_schema=output_schema, record=record,
    )  # fmt: skip
    from agentdeck.cli.run_agent import run_agent

    raise typer.Exit(run_agent(spec, agent, as_json))
