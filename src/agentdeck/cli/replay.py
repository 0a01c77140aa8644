"""``agentdeck replay ID``: a recorded run played again against its cassette, in a
fresh workspace with the recorded start state (``runner.recording.replay_run``).

Like ``recordings``, it reads the cassettes and checkpoints on this machine's disk,
and runs the agent in this process (its own runner, its model the replay server).
"""

from __future__ import annotations

import asyncio
import json
import signal
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from agentdeck.cli.ending import Ending
    from agentdeck.core.approvals import Approval
    from agentdeck.core.templates import Template
    from agentdeck.runner.recording.replay import ReplayReport
    from agentdeck.runner.recording.replay_template import TemplateSource
    from agentdeck.runner.runner import Runner
    from agentdeck.settings import Settings

ASK_POLL_SECONDS = 0.25
DIVERGED = 1
COULD_NOT_RUN = 2  # as the other commands' usage and refusal errors


def register(root: typer.Typer) -> None:
    root.command("replay")(replay)


def replay(
    agent_id: Annotated[str, typer.Argument(help="The recorded agent's id.")],
    strict: Annotated[
        bool, typer.Option("--strict", help="Stop the agent at the first divergence.")
    ] = False,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            help="Run it under this policy profile (name or file); it wins over a "
            "--template's own profile.",
        ),
    ] = None,
    template: Annotated[
        str | None,
        typer.Option(
            "--template",
            help="Run it as this agent template would (its tools, system prompt, Claude "
            "Code keys, profile), from the recorded project's, yours or the built-in "
            "ones; the cassette still answers, so its model is the recording's.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Replay a recorded run against its cassette; exit 0 if it was faithful, 1 if
    it diverged, 2 if it could not run.

    Its start state is restored into a fresh workspace, the real Claude Code is
    answered from the cassette in order, and each request is compared with the
    recorded one: a divergence report names the turn, the tool call and a diff.
    The policy is enforced again: a call the profile asks about is asked again
    (answer it from another terminal with agentdeck approve, or the dashboard).

    Exit codes: 0 the replay was faithful; 1 it diverged (the report says where);
    2 it could not run (an unknown id, a refused cassette, a bad profile or
    template, bad usage): one line on stderr says why; 130 Ctrl-C, 143 / 129
    SIGTERM / SIGHUP (the agent left interrupted)."""
    from agentdeck.cli.context import run_async
    from agentdeck.cli.ending import watch
    from agentdeck.errors import AgentdeckError

    options = (agent_id, strict, profile, template)
    # An error is never a divergence's exit 1: a CI script tells them apart.
    try:
        done = run_async(
            lambda settings: watch("replay", lambda ending: _replayed(settings, ending, *options))
        )
    except AgentdeckError as exc:
        from agentdeck.cli import out

        out.report(exc)
        raise typer.Exit(COULD_NOT_RUN) from None
    except OSError as exc:  # the disk (a cassette, a workspace) failed it
        typer.echo(f"error: the replay could not run: {exc.strerror or exc}", err=True)
        raise typer.Exit(COULD_NOT_RUN) from None
    if isinstance(done, int):  # SIGTERM, SIGHUP: its agent stopped, left interrupted
        raise typer.Exit(done)
    report, interrupted = done
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        _show(report)
    if interrupted:
        from agentdeck.cli.ending import exit_code

        typer.echo("the replay was interrupted (Ctrl-C): the report is of what it did", err=True)
        raise typer.Exit(exit_code(signal.SIGINT))
    raise typer.Exit(DIVERGED if report.diverged else 0)


async def _replayed(
    settings: Settings,
    ending: Ending,
    agent_id: str,
    strict: bool,
    profile: str | None,
    template: str | None,
) -> tuple[ReplayReport, bool]:
    """The report, and whether Ctrl-C stopped the agent (left ``interrupted``, as a
    stop signal leaves it: before, it was shut down as if its turn had ended)."""
    from agentdeck.cli.context import opened_store
    from agentdeck.daemon.compose import build_runner
    from agentdeck.runner.recording.replay_run import replay as replayed
    from agentdeck.runner.recording.store import Recordings

    Recordings.of(settings).existing(agent_id)  # a bad or unknown id: before any work
    source = template_source(settings, template, profile) if template is not None else None
    async with opened_store(settings) as store:
        runner = build_runner(store, settings)
        ending.supervise(runner)
        asks = asyncio.create_task(_say_asks(runner))
        stops: list[asyncio.Future[None]] = []

        def on_interrupt() -> None:
            if not stops:
                reason = "stopped: agentdeck replay got SIGINT"
                stops.append(asyncio.ensure_future(runner.stop_now(reason)))

        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
        try:
            report = await replayed(
                store, runner, agent_id, strict=strict, profile=profile, template=source
            )
            await asyncio.gather(*stops)
            return report, bool(stops)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            asks.cancel()
            await asyncio.gather(asks, return_exceptions=True)
            await runner.shutdown()


async def _say_asks(runner: Runner) -> None:
    """Each approval the replay waits for, said once on stderr with how to answer
    it (the tool's name only: its input is the model's, not for a terminal)."""
    said: set[str] = set()
    while True:
        for agent_id in list(runner.sessions):  # not another's (a daemon's, in this home)
            for approval in await runner.governor.approvals.list_approvals(agent_id=agent_id):
                if approval.id not in said:
                    said.add(approval.id)
                    _say(approval)
        await asyncio.sleep(ASK_POLL_SECONDS)


def _say(approval: Approval) -> None:
    tool = "".join(c for c in approval.tool if c.isprintable())[:80]
    typer.echo(
        f"waiting for approval {approval.id} ({tool}): answer it with "
        f"agentdeck approve {approval.id} or agentdeck deny {approval.id}",
        err=True,
    )


def template_source(settings: Settings, name: str, profile: str | None) -> TemplateSource:
    """Template ``name`` as ``run --template`` finds it from the recorded project,
    held to the profile the replay runs under (``profile`` wins over its own);
    ``UsageError`` (exit 2) for a name that is none or no template of that name,
    ``TemplateError`` (exit 2) for a file that is not one."""
    from agentdeck.errors import NotFound, UsageError
    from agentdeck.orchestration.templates import resolve
    from agentdeck.runner.recording.replay_template import checked_name

    checked_name(name)

    def found(project: str | None) -> Template:
        try:
            return resolve(settings, name, project, profile=profile)
        except NotFound as exc:
            raise UsageError(f"no agent template named {name!r}", hint=exc.hint) from None

    return found


def _show(report: ReplayReport) -> None:
    from agentdeck.runner.recording.replay import BEYOND

    state = report.state or "?"
    how = f"template {report.template}, {state}" if report.template else state
    typer.echo(
        f"replayed {report.recorded_id} as {report.agent_id or '-'} ({how}): "
        f"{report.requests} requests, {report.recorded} recorded"
    )
    for note in report.notes:
        typer.echo(f"note: {note}")
    if not report.diverged:
        typer.echo("no divergence")
        return
    for d in report.divergences:
        call = f"{d.tool} ({d.tool_use_id})" if d.tool else "no tool call"
        typer.echo(f"divergence at turn {d.turn}, after {call}:")
        typer.echo(d.diff)
    if report.beyond:
        typer.echo(f"{BEYOND} ({report.recorded} requests)")
    if report.ended_otherwise:
        typer.echo(
            f"the replay ended {report.state}; the recorded run ended {report.recorded_state}"
        )
    if report.stopped_at is not None:
        typer.echo(f"--strict: the agent was stopped at turn {report.stopped_at}")
