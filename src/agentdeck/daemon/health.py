"""The daemon watches its own event loop: a task that sleeps ``interval`` and
measures how late it woke. The last minute's samples give the lag's p99 and max
(``core.health.lag_of``); each wake-up is also when the systemd watchdog is fed
(``daemon.watchdog``), so a loop that no longer turns feeds nothing.

Cheap: one wake-up every half second, a deque of at most ~120 floats.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable

from agentdeck.core.health import LoopLag, lag_of

logger = logging.getLogger(__name__)

INTERVAL_SECONDS = 0.5
WINDOW_SECONDS = 60.0

Tick = Callable[[float], None]


class LoopMonitor:
    """The lag of the loop it runs on, over the last ``window`` seconds."""

    def __init__(
        self,
        *,
        interval: float = INTERVAL_SECONDS,
        window: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self.window = window
        self._clock = clock
        self._samples: deque[tuple[float, float]] = deque()
        self._ticks: list[Tick] = []
        self._task: asyncio.Task[None] | None = None

    def on_tick(self, tick: Tick) -> None:
        """``tick(lag)`` after every wake-up, on the loop (a slow one delays the next)."""
        self._ticks.append(tick)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="loop-monitor")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def record(self, lag: float) -> None:
        """One sample, now; older ones than the window are dropped."""
        now = self._clock()
        self._samples.append((now, lag))
        while self._samples and self._samples[0][0] < now - self.window:
            self._samples.popleft()

    def lag(self) -> LoopLag:
        """The last minute's lag; a loop stalled right now counts from its last wake-up."""
        now = self._clock()
        lags = [lag for at, lag in self._samples if at >= now - self.window]
        if self._samples:
            # Asked from the loop itself, this is ~0; asked from elsewhere while the
            # loop is stuck, it is how long it has been stuck.
            overdue = now - self._samples[-1][0] - self.interval
            if overdue > 0 and (not lags or overdue > lags[-1]):
                lags.append(overdue)
        return lag_of(lags, expected=int(self.window / self.interval))

    async def _run(self) -> None:
        while True:
            before = self._clock()
            await asyncio.sleep(self.interval)
            lag = max(0.0, self._clock() - before - self.interval)
            self.record(lag)
            for tick in self._ticks:
                try:
                    tick(lag)
                except Exception:
                    logger.exception("loop monitor tick failed")
