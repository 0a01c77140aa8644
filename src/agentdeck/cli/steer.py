"""Following an agent through the Deck: ``run``, ``send`` and ``resume`` written once.

Whether the deck is a daemon's (``RemoteDeck``) or this command's own (the CLI
without a daemon), the command starts or steers the agent through it and
follows its log with ``follow``: the events as they are committed, a spinner on a
terminal, Ctrl-C once to interrupt the turn and twice to kill, and how it ended.
An agent another process supervises without a daemon (an ``agentdeck run`` in
another terminal) is followed as well: its events come from the log, and a
supervisor that died meanwhile ends the wait with an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING, Any

from agentdeck.cli.context import console
from agentdeck.cli.remote_follow import FINAL_STATES, AnswerTo, print_event, report, turn_open
from agentdeck.core.partial import PartialText
from agentdeck.core.ports import SubscriptionDropped
from agentdeck.errors import AgentdeckError

if TYPE_CHECKING:
    from rich.status import Status

    from agentdeck.core.agent import Agent
    from agentdeck.core.deck import Deck
    from agentdeck.core.events import StoredEvent

# How often an in-process follower looks at the agent when its log is silent (its
# supervisor may have died; a daemon's stream has pings of its own instead).
SILENCE_SECONDS = 2.0


async def turn_running(deck: Deck, agent: Agent, mark: int) -> bool:
    """Whether the agent's process, as the log stands at ``mark``, was sent a message
    (its first prompt too) it has not completed a turn for (``turn_open``, read back
    page by page); a finished agent has none."""
    if not agent.state.is_live:
        return False
    before: int | None = mark + 1
    while before is not None:
        page = await deck.events_before(agent_id=agent.id, before=before, limit=200)
        found = turn_open([event.to_dict() for event in page])
        if found is not None:
            return found
        before = page[0].id if len(page) == 200 else None
    return False


async def follow(
    deck: Deck,
    agent_id: str,
    *,
    after: int,
    as_json: bool,
    until_turn: bool,
    answer: AnswerTo | None = None,
) -> int:
    """Print the agent's events after ``after`` until its state is final, or (with
    ``until_turn``) until the turn in progress completes — with ``answer``, the
    turn that answers the message sent — and the agent settles after it (idle,
    or its process ended); the exit code: 0 when that turn succeeded."""
    watch = _Watch(answer, until_turn)
    with _ctrl_c(deck, agent_id), _spinner(as_json) as status, _live(status) as live:

        def show(event: StoredEvent | PartialText) -> bool:
            """Take one event (print it, update the spinner); False once it belongs
            to what comes after the wait."""
            nonlocal after
            if isinstance(event, PartialText):
                if live is not None:
                    live.partial(event.to_dict())
                return True
            after = event.id
            data = event.to_dict()
            if not watch.saw(data):
                return False
            if not as_json and not (live is not None and live.event(data)):
                print_event(data, as_json=False)
            if status is not None:
                status.update(watch.status())
            return not watch.over

        while not watch.over:
            try:
                follow = deck.follow if live is None else deck.follow_partial
                async for batch in follow(
                    after=after, agent_id=agent_id, heartbeat=SILENCE_SECONDS
                ):
                    if not batch and watch.silence(await deck.get_agent(agent_id)):
                        # It ended (or settled) while the feed was quiet: what it
                        # committed before may not have reached the feed yet (another
                        # process wrote it: the feed polls). The log has it all.
                        while page := await deck.events(after=after, agent_id=agent_id):
                            if not all(show(event) for event in page):
                                break
                        watch.over = True
                    if not all(show(event) for event in batch) or watch.over:
                        break
                else:
                    break  # the deck stopped (a daemon shutting down)
            except SubscriptionDropped as dropped:  # read too slowly: on from there
                after = max(after, dropped.position)
    return report((await deck.get_agent(agent_id)).to_dict(), watch.result, as_json)


# What only a turn does: seen after the awaited one, the agent went on to the next.
_NEXT_TURN = frozenset(
    {"user_message_sent", "assistant_text", "tool_called", "turn_completed", "question_asked"}
)


class _Watch:
    """What a follower has seen of one agent, and whether it has seen enough."""

    def __init__(self, answer: AnswerTo | None, until_turn: bool) -> None:
        self.answer = answer
        self.until_turn = until_turn
        self.result: dict[str, Any] | None = None
        self.over = False
        self._settling = False  # the awaited turn completed: its state to come
        self._state = "starting"
        self._tool: str | None = None
        self._turns = 0
        self._cost = 0.0

    def saw(self, event: dict[str, Any]) -> bool:
        """Take one event; False when it belongs to what comes after (not shown)."""
        kind = event["type"]
        data = event["data"]
        if self._settling and kind in _NEXT_TURN:
            self.over = True  # a next turn began: this one's answer was given
            return False
        answered = self.answer is None or self.answer.answered_by(event)
        if kind == "state_changed":
            self._state = data["new"]
            if data["new"] in FINAL_STATES or self._settling:
                self.over = True
        elif kind == "tool_called":
            self._tool = data.get("tool")
        elif kind == "tool_returned":
            self._tool = None
        elif kind == "turn_completed":
            self.result = data
            self._tool = None
            self._turns += int(data.get("num_turns") or 0)
            self._cost += float(data.get("cost_usd") or 0.0)
            if self.until_turn and answered:
                self._settling = True
        return True

    def silence(self, agent: Agent) -> bool:
        """Nothing new on the feed: whether the agent as it is now ends the wait
        (it ended, or settled silently, once the log is read to its end)."""
        if not agent.state.is_live or (self._settling and agent.state.value != "running"):
            return True
        from agentdeck.runner.steering import supervisor_gone

        if supervisor_gone(agent):
            raise AgentdeckError(
                f"agent {agent.id}'s supervising process ({agent.owner_pid}) ended before "
                "it answered the message",
                hint=f"see `agentdeck logs {agent.id}`; `agentdeck send` to it resumes it",
            )
        return False

    def status(self) -> str:
        return (
            f"{self._state} · {self._tool or 'thinking'} · {self._turns} turns · ${self._cost:.4f}"
        )


@contextlib.contextmanager
def _live(status: Status | None) -> Any:
    """The text being written, on the terminal the spinner is on (paused meanwhile:
    it would redraw over the line); None off a terminal or for JSON."""
    if status is None:
        yield None
        return
    from agentdeck.cli.live_text import LiveText

    colour = console.is_terminal and not console.no_color
    live = LiveText(colour=colour, on_start=status.stop, on_end=status.start)
    try:
        yield live
    finally:
        live.close()


@contextlib.contextmanager
def _spinner(as_json: bool) -> Any:
    """A live status line on a terminal (none for JSON or a pipe)."""
    if as_json or not console.is_terminal:
        yield None
        return
    from rich.status import Status

    status: Status = Status("starting", console=console)
    status.start()
    try:
        yield status
    finally:
        status.stop()


_background: set[asyncio.Task[None]] = set()


@contextlib.contextmanager
def _ctrl_c(deck: Deck, agent_id: str) -> Any:
    """Ctrl-C once interrupts the agent's turn, twice kills it (through the deck:
    the daemon's agent or this command's own alike)."""
    loop = asyncio.get_running_loop()
    presses = 0

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        if presses == 1:
            console.print("[yellow]interrupting… (Ctrl-C again to kill)[/]")
            task = loop.create_task(_quietly(deck.interrupt(agent_id)))
        else:
            console.print("[red]killing…[/]")
            task = loop.create_task(_quietly(deck.kill(agent_id)))
        _background.add(task)
        task.add_done_callback(_background.discard)

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)


async def _quietly(action: Any) -> None:
    with contextlib.suppress(AgentdeckError):
        await action
