"""Follow a session this process supervises until it finishes, showing progress.

(An agent a daemon runs is followed by ``remote.follow``.)
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.status import Status

from agentdeck.cli.context import console
from agentdeck.cli.remote import report
from agentdeck.cli.render import event_line
from agentdeck.core.events import EventType, StoredEvent

if TYPE_CHECKING:
    from agentdeck.runner.session import AgentSession
    from agentdeck.store.store import Store


async def follow_session(store: Store, session: AgentSession, *, as_json: bool) -> int:
    """Print the agent's events as they are committed; return the exit code.

    Ctrl-C once interrupts the agent, twice kills it.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[StoredEvent] = asyncio.Queue()
    agent_id = session.agent.id

    def on_events(events: Sequence[StoredEvent]) -> None:  # writer thread
        for event in events:
            if event.agent_id == agent_id:
                loop.call_soon_threadsafe(queue.put_nowait, event)

    unsubscribe = store.subscribe(on_events)
    presses = 0

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        action = session.interrupt() if presses == 1 else session.kill()
        console.print(
            "[yellow]interrupting… (Ctrl-C again to kill)[/]"
            if presses == 1
            else "[red]killing…[/]"
        )
        task = loop.create_task(_quietly(action))
        _background.add(task)
        task.add_done_callback(_background.discard)

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    last_result: dict[str, object] | None = None
    status = None if as_json or not console.is_terminal else Status("starting", console=console)
    try:
        if status:
            status.start()
        # Events committed before we subscribed.
        for event in await store.read(agent_id=agent_id):
            queue.put_nowait(event)
        seen = 0
        finished = asyncio.ensure_future(session.finished.wait())
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, finished}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                break
            event = getter.result()
            if event.id <= seen:
                continue
            seen = event.id
            if event.type == EventType.TURN_COMPLETED:
                last_result = event.data
            if not as_json:
                line = event_line(event.to_dict())
                if line is not None:
                    console.print(line.rich())
            if status:
                a = session.agent
                status.update(
                    f"{a.state} · {a.current_tool or 'thinking'} · "
                    f"{a.turns} turns · ${a.cost_usd:.4f}"
                )
        # The tail committed with the final state may not have reached the
        # queue yet (subscribers run after the writer resolves its futures).
        for event in await store.read(agent_id=agent_id, after=seen, limit=100_000):
            if event.type == EventType.TURN_COMPLETED:
                last_result = event.data
            line = None if as_json else event_line(event.to_dict())
            if line is not None:
                console.print(line.rich())
    finally:
        if status:
            status.stop()
        unsubscribe()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
    return report(session.agent.to_dict(), last_result, as_json)


_background: set[asyncio.Task[None]] = set()


async def _quietly(action: object) -> None:
    with contextlib.suppress(Exception):
        await action  # type: ignore[misc]
