"""The text being written, coalesced for live followers (``core.partial``).

The runner's sessions write each delta Claude Code sends; this keeps them per
agent and hands the followers at most one edit per ``interval`` per agent (the
first at once), the block's text scrubbed whole (``PartialBlock``). Nothing here
is stored: a whole message ends what was held for its agent (its event shows it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from agentdeck.core.partial import PartialBlock, PartialText

INTERVAL_SECONDS = 0.1  # at most ten edits a second per agent


class PartialCoalescer:
    """A ``core.partial.PartialSink`` that calls ``deliver`` with the edits, on the loop."""

    def __init__(
        self,
        deliver: Callable[[PartialText], None],
        *,
        interval: float = INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._deliver = deliver
        self.interval = interval
        self._clock = clock
        self._blocks: dict[str, PartialBlock] = {}  # by agent: the block being written
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._last: dict[str, float] = {}  # by agent: when its last edit went out

    def write(
        self,
        agent_id: str,
        block: str,
        delta: str,
        parent_tool_use_id: str | None,
        *,
        send: bool = True,
    ) -> None:
        """More of the agent's text; ``send``: an edit is due (someone follows)."""
        current = self._blocks.get(agent_id)
        if current is None or current.block != block:
            if current is not None and send:
                self.flush(agent_id)  # the last words of the block before
            current = PartialBlock(agent_id, block, parent_tool_use_id)
            self._blocks[agent_id] = current
        current.add(delta)
        if send and agent_id not in self._timers:
            due = self._last.get(agent_id, float("-inf")) + self.interval
            wait = max(0.0, due - self._clock())
            loop = asyncio.get_running_loop()
            self._timers[agent_id] = loop.call_later(wait, self.flush, agent_id)

    def flush(self, agent_id: str) -> None:
        """What the agent's block holds now goes out (if anything new is ready)."""
        timer = self._timers.pop(agent_id, None)
        if timer is not None:
            timer.cancel()
        block = self._blocks.get(agent_id)
        if block is None:
            return
        self._last[agent_id] = self._clock()  # each take scrubs the block: as rarely
        edit = block.take()
        if edit is not None:
            self._deliver(edit)

    def end(self, agent_id: str) -> None:
        timer = self._timers.pop(agent_id, None)
        if timer is not None:
            timer.cancel()
        self._blocks.pop(agent_id, None)
        self._last.pop(agent_id, None)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._blocks.clear()
        self._last.clear()

    @property
    def writing(self) -> int:
        """How many agents have text held (a test's view of what is kept)."""
        return len(self._blocks)
