"""``agentdeck run``: one agent, live progress, exit code from its result."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentdeck.cli.client import connect
from agentdeck.cli.context import opened, run_async
from agentdeck.core.agent import AgentSpec
from agentdeck.errors import UsageError
from agentdeck.settings import Settings


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
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
) -> None:
    """Run one agent to the end of its turn; exit 0 on success, 1 if it ended in error."""
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    if base and not worktree:
        raise UsageError("--base is for --worktree: the ref the worktree starts from")
    if worktree and not cwd:
        cwd = "."  # the repository is where the command runs
    resolved_cwd = str(Path(cwd).expanduser().resolve()) if cwd else None
    if scenario and Path(scenario).is_file():
        scenario = str(Path(scenario).resolve())  # the daemon has its own cwd
    spec = AgentSpec(
        prompt=prompt,
        name=name,
        cwd=resolved_cwd,
        model=model,
        allow=tuple(allow or ()),
        deny=tuple(deny or ()),
        append_system_prompt=append_system_prompt,
        max_turns=max_turns,
        budget_usd=budget_usd,
        scenario=scenario,
        profile=str(Path(profile).resolve()) if profile and Path(profile).is_file() else profile,
        # Templates come from the project: --cwd, or where the command runs.
        project=resolved_cwd or str(Path.cwd().resolve()),
        workspace="worktree" if worktree else None,
        base=base,
    )

    async def go(settings: Settings) -> int:
        from agentdeck.cli.follow import follow_remote, follow_session

        client = await connect(settings)
        if client is not None:
            try:
                started = await client.create_agent(spec, keep_alive=False, template=agent)
                return await follow_remote(client, started.id, after=0, as_json=as_json)
            finally:
                await client.aclose()
        run_spec = spec
        if agent:
            from agentdeck.core.templates import apply_template
            from agentdeck.orchestration.templates import resolve

            run_spec = apply_template(resolve(settings, agent, spec.project), spec)
        async with opened(settings) as (store, runner):
            session = await runner.start(run_spec)
            return await follow_session(store, session, as_json=as_json)

    raise typer.Exit(run_async(go))
