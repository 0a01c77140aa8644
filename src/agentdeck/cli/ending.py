"""SIGTERM and SIGHUP to a command that supervises agents itself (an embedded
``agentdeck run``, ``send`` or ``resume``, with no daemon).

Left to their default, either signal ends the process at once: its Claude Code
processes, and the sandbox bubblewrap runs in a session of its own, live on
without it (the sandbox's network proxy gone with it), the agent's row says it
still runs, and the sandbox's private directory stays. So they are handled
as a kill is: before there is a runner (Claude Code booting early, the store
opening) the command's work is cancelled, which stops what it began; once
there is one, ``Runner.stop_now`` stops every agent's whole process tree now
(an agent waiting for an approval included: nothing waits for an answer) and
leaves it ``interrupted`` (it was cut short, not killed by a person: ``agentdeck
resume`` carries it on). The command then exits 128+signal, as a shell reports
a process that a signal ended.

A hang-up means the terminal is gone: what the command would still print to
it is sent to ``/dev/null`` instead (a write to a hung-up terminal fails); a
command started under ``nohup`` keeps ignoring hang-ups. SIGINT is left as it
is: Ctrl-C interrupts the turn, a second one kills.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Iterator
from typing import Protocol, TypeVar

from agentdeck.runner import procs

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Stoppable(Protocol):
    """What a stop signal stops: this command's own deck (``Deck.stop_now``)."""

    async def stop_now(self, reason: str) -> None: ...


def exit_code(sig: int) -> int:
    """What a shell reports for a process ``sig`` ended."""
    return 128 + sig


class Ending:
    """The stop signals of one command that supervises agents (``watch``)."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.caught: signal.Signals | None = None
        self._task: asyncio.Task[object] | None = None
        self._runner: Stoppable | None = None
        self._stopping: asyncio.Future[None] | None = None

    @property
    def code(self) -> int | None:
        """The exit code once a stop signal came, else None."""
        return None if self.caught is None else exit_code(self.caught)

    @property
    def reason(self) -> str:
        name = self.caught.name if self.caught is not None else "a stop signal"
        return f"stopped: agentdeck {self.command} got {name}"

    def supervise(self, runner: Stoppable) -> None:
        """What runs the agents a signal stops from now on (this command's deck)."""
        self._runner = runner
        if self.caught is not None and self._stopping is None:
            self._stop_runner(runner)

    async def stopped(self) -> None:
        """Once the stop a signal began is over (at once if none began)."""
        if self._stopping is not None:
            await asyncio.shield(self._stopping)

    @contextlib.contextmanager
    def handlers(self) -> Iterator[None]:
        """The handlers, for the current task's work, while in the block."""
        loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        installed = []
        try:
            for sig in procs.stop_signals():
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    previous = signal.getsignal(sig)
                    loop.add_signal_handler(sig, self._on_signal, sig)
                    installed.append((sig, previous))
            yield
        finally:
            for sig, previous in installed:
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError, TypeError):
                    loop.remove_signal_handler(sig)
                    signal.signal(sig, previous)  # as it was before (the loop's sets SIG_DFL)

    def _on_signal(self, sig: signal.Signals) -> None:
        if self.caught is not None:
            return  # already stopping, with a deadline of its own
        self.caught = sig
        if sig == signal.SIGHUP:
            procs.leave_terminal()
        logger.warning("agentdeck %s got %s: stopping its agents", self.command, sig.name)
        if self._runner is not None:
            self._stop_runner(self._runner)
        elif self._task is not None:
            self._task.cancel()  # what it began (an early Claude Code) stops with it

    def _stop_runner(self, runner: Stoppable) -> None:
        self._stopping = asyncio.ensure_future(runner.stop_now(self.reason))


async def watch(command: str, work: Callable[[Ending], Awaitable[T]]) -> T | int:
    """``work``'s outcome; or, when a stop signal came, 128+signal once every agent
    it started is stopped (whatever ``work`` then raised or returned)."""
    ending = Ending(command)
    with ending.handlers():
        try:
            outcome = await work(ending)
        except (Exception, asyncio.CancelledError):
            if ending.code is None:
                raise
            await ending.stopped()
            logger.info("%s", ending.reason, exc_info=True)
            return ending.code
        await ending.stopped()
        return outcome if ending.code is None else ending.code
