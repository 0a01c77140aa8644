"""``agentdeck run`` without a daemon: the agent runs in this process.

Both ways in (the quick path, ``cli.quick``, and the Typer command) call
``run_embedded``; the quick path's saves Typer and the other commands' modules
before Claude Code is spawned (``cli.early``), so it boots sooner.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from agentdeck.cli.importing import importing

if TYPE_CHECKING:
    from agentdeck.cli.ending import Ending
    from agentdeck.core.agent import AgentSpec
    from agentdeck.settings import Settings


def run_embedded(spec: AgentSpec, agent: str | None, as_json: bool) -> int:
    """Run ``spec``'s agent (from template ``agent`` if given) to the end of its
    turn; the exit code from its result."""
    from agentdeck.runner import sdk_private

    # What spawns Claude Code early: the SDK's options and transport, but not yet
    # the rest of the SDK (and all of mcp with it), nor the store.
    sdk_private.defer()
    with importing():
        import agentdeck.cli.early  # noqa: F401
        from agentdeck.cli.context import configure_logging, end_quickly, opened, run_async

    configure_logging()  # as the Typer app has it (a no-op when it did already)

    async def go(settings: Settings) -> int:
        from agentdeck.cli.ending import watch

        return await watch("run", lambda ending: work(settings, ending))

    async def work(settings: Settings, ending: Ending) -> int:
        from dataclasses import replace

        from agentdeck.cli.early import spawn
        from agentdeck.core.usage import LOCAL_OWNER

        run_spec = replace(spec, owner=LOCAL_OWNER)  # no daemon, no users: the machine's
        if agent:
            from agentdeck.core.templates import apply_template
            from agentdeck.orchestration.templates import resolve

            run_spec = apply_template(resolve(settings, agent, spec.project), run_spec)
        # Claude Code boots (~0.8 s) while the rest is imported and the store opened:
        # the runner adopts the process if it fits the agent exactly (cli/early.py).
        early = await spawn(settings, run_spec)
        try:
            with importing():  # the SDK, the store, the runner, orchestration, in one go
                sdk_private.finish()
                import agentdeck.cli.follow
                import agentdeck.orchestration.service
                import agentdeck.runner.runner  # noqa: F401
            from agentdeck.cli.follow import follow_session

            async with opened(settings) as (store, runner):
                ending.supervise(runner)  # SIGTERM/SIGHUP stop its agents from now on
                try:
                    if early is not None:
                        runner.adopt(early.warm, early.model)
                        early = None  # the runner's now: its shutdown stops what is unclaimed
                    session = await runner.start(run_spec)
                    code = await follow_session(store, session, as_json=as_json)
                finally:
                    await ending.stopped()  # while the store is open: the agents say so
        finally:
            if early is not None:  # never handed over (a failure, Ctrl-C, SIGTERM)
                await _to_the_end(early.close())
        end_quickly()  # the store is closed, the agent's processes reaped
        return code

    return run_async(go)


async def _to_the_end(work: Awaitable[None]) -> None:
    """``work`` run to its end even if this task is cancelled meanwhile (a signal):
    what it stops must not outlive the process."""
    task = asyncio.ensure_future(work)
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
    task.result()
