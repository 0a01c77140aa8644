"""Follow a session this process supervises until it finishes, showing progress;
or, without a daemon, an agent another process supervises until it answers.

(An agent a daemon runs is followed by ``remote_follow.follow``.)
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.status import Status

from agentdeck.cli.context import console
from agentdeck.cli.remote_follow import FINAL_STATES, AnswerTo, print_event, report, turn_open
from agentdeck.cli.render import event_line
from agentdeck.cli.wire import EVENT_PAGE
from agentdeck.core.events import EventType, StoredEvent

if TYPE_CHECKING:
    from agentdeck.core.agent import Agent
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


# --- an agent another process supervises (no daemon) ------------------------------


async def turn_running(store: Store, agent: Agent, mark: int) -> bool:
    """Whether the agent's process, as the log stands at ``mark``, was sent a message
    it has not completed a turn for (``remote_follow.turn_open``, read off the store)."""
    if not agent.state.is_live:
        return False
    before: int | None = mark + 1
    while before is not None:
        page = await store.read_tail(agent_id=agent.id, before=before, limit=200)
        found = turn_open([event.to_dict() for event in page])
        if found is not None:
            return found
        before = page[0].id if len(page) == 200 else None
    return False


async def follow_answer(
    store: Store, agent_id: str, *, after: int, answer: AnswerTo, as_json: bool, poll: float
) -> int:
    """Print the agent's events after ``after`` until the turn that answers the
    message sent (``answer``) completes, or the agent ends; the exit code as
    ``remote_follow.follow``'s. Its supervisor is another process: the log is polled, and
    a supervisor gone meanwhile ends the wait with an error."""
    from agentdeck.errors import AgentdeckError
    from agentdeck.runner.steering import owned_elsewhere

    last_result: dict[str, object] | None = None
    ended = False
    while True:
        batch = await store.read(agent_id=agent_id, after=after, limit=EVENT_PAGE)
        for event in batch:
            after = event.id
            data = event.to_dict()
            if not as_json:
                print_event(data, as_json=False)
            answered = answer.answered_by(data)
            if event.type == EventType.TURN_COMPLETED:
                last_result = event.data
                if answered:
                    shown = (await store.get_agent(agent_id)).to_dict()
                    code = report(shown, last_result, as_json)
                    # A one-shot agent (an `agentdeck run`) is still `running` until
                    # its process ends: the turn's own outcome says how it went.
                    if shown["state"] in FINAL_STATES:
                        return code
                    return 1 if event.data.get("is_error") else 0
            if event.type == EventType.STATE_CHANGED and event.data.get("new") in FINAL_STATES:
                return report((await store.get_agent(agent_id)).to_dict(), last_result, as_json)
        if batch:
            continue
        agent = await store.get_agent(agent_id)
        if not agent.state.is_live:
            if ended:  # no final state change after ``after``: it ended before the mark
                return report(agent.to_dict(), last_result, as_json)
            ended = True  # its last events are committed with its final state: one more read
            continue
        if not owned_elsewhere(agent):
            raise AgentdeckError(
                f"agent {agent_id}'s supervising process ({agent.owner_pid}) ended before "
                "it answered the message",
                hint=f"see `agentdeck logs {agent_id}`; `agentdeck send` to it resumes it",
            )
        await asyncio.sleep(poll)
