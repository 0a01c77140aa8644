"""How well the deck is (``/readyz``, ``agentdeck status``, ``doctor``, the board's
top bar): the store takes a write, the runner takes agents, the event loop turns
on time, the home's disk has room. Each part judged alone, the whole its worst.

The store's probe is a real write (``Store.probe_write``), so it is made at most
once per ``STORE_PROBE_SECONDS`` however often the probe is polled, and never
waited on past ``STORE_DEADLINE_SECONDS``.
"""

from __future__ import annotations

import asyncio
import shutil
import time

from agentdeck.core.health import (
    HealthCheck,
    HealthStatus,
    LoopLag,
    Readiness,
    judge_disk,
    judge_lag,
)
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.daemon.health import LoopMonitor
from agentdeck.errors import AgentdeckError

STORE_PROBE_SECONDS = 5.0
STORE_DEADLINE_SECONDS = 3.0


class Health(DeckParts):
    # Set by the daemon (``watch_loop``); a deck opened for one command has none.
    _loop_monitor: LoopMonitor | None = None
    _store_seen: tuple[float, HealthCheck] | None = None
    _store_probing: asyncio.Future[HealthCheck] | None = None

    def watch_loop(self, monitor: LoopMonitor) -> None:
        """The daemon's loop monitor: its lag is part of readiness from now on."""
        self._loop_monitor = monitor

    def loop_lag(self) -> LoopLag | None:
        """The event loop's lag over the last minute (None: not watched)."""
        return self._loop_monitor.lag() if self._loop_monitor is not None else None

    def loop_check(self) -> HealthCheck:
        """The loop's lag, judged (cheap: the board's top bar asks it on every page)."""
        return judge_lag(self.loop_lag())

    async def readiness(self) -> Readiness:
        """Every part judged now (the store's write at most every few seconds)."""
        lag = self.loop_lag()
        checks = [
            await self._store_check(),
            self._runner_check(),
            judge_lag(lag),
            await asyncio.to_thread(self._disk_check),
        ]
        return Readiness.of(checks, lag)

    async def _store_check(self) -> HealthCheck:
        seen = self._store_seen
        if seen is not None and time.monotonic() - seen[0] < STORE_PROBE_SECONDS:
            return seen[1]
        if self._store_probing is None or self._store_probing.done():
            # One probe at a time, shared by whoever asks meanwhile.
            self._store_probing = asyncio.ensure_future(self._probe_store())
        return await asyncio.shield(self._store_probing)

    async def _probe_store(self) -> HealthCheck:
        started = time.monotonic()
        try:
            await asyncio.wait_for(self._store.probe_write(), STORE_DEADLINE_SECONDS)
        except TimeoutError:
            check = HealthCheck(
                "store",
                HealthStatus.DEGRADED,
                f"a write to {self._store.name} took over {STORE_DEADLINE_SECONDS:.0f} s",
            )
        except AgentdeckError as exc:
            check = HealthCheck(
                "store", HealthStatus.UNHEALTHY, f"{self._store.name} takes no write: {exc}"
            )
        else:
            took = time.monotonic() - started
            check = HealthCheck(
                "store", HealthStatus.OK, f"{self._store.name} written in {took * 1000:.0f} ms"
            )
        self._store_seen = (time.monotonic(), check)
        return check

    def _runner_check(self) -> HealthCheck:
        live, limit = self._runner.live_count(), self.settings.max_live_agents
        said = f"{live} of {limit} agents live"
        if self._runner.stopping:
            return HealthCheck("runner", HealthStatus.UNHEALTHY, "stopping: no agent starts")
        if live >= limit:
            return HealthCheck("runner", HealthStatus.DEGRADED, f"{said}: no room for another")
        return HealthCheck("runner", HealthStatus.OK, said)

    def _disk_check(self) -> HealthCheck:
        home = self.settings.home_dir
        return judge_disk(shutil.disk_usage(home).free, str(home))
