"""The Deck as a runner host: on a deck with runner hosts (PostgreSQL), the
daemon (``agentdeck up``, unless ``--no-runner``) and ``agentdeck runner`` run
the agents they claim (``runner.hosting``); new agents wait ``queued`` for one."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket

from agentdeck import __version__
from agentdeck.core.hosts import Host
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.runner.hosting import RunnerHost, reap_every

logger = logging.getLogger(__name__)


class Hosting(DeckParts):
    _host: RunnerHost | None = None
    _reaping: asyncio.Task[None] | None = None

    @property
    def queueing(self) -> bool:
        """New agents wait for a runner host (a deck with runner hosts)."""
        return self._runner.queueing

    @property
    def runner_host(self) -> RunnerHost | None:
        return self._host

    def host_of_settings(
        self,
        *,
        name: str | None = None,
        capacity: int | None = None,
        labels: list[str] | None = None,
        project_roots: list[str] | None = None,
    ) -> Host:
        """This process as a runner host: the arguments, else the settings, else
        the machine's name and the deck's limit of live agents."""
        settings = self.settings
        if capacity is None:
            capacity = settings.runner_capacity
        if capacity is None:
            capacity = settings.max_live_agents
        return Host(
            name=name or settings.runner_name or socket.gethostname().split(".")[0],
            hostname=socket.gethostname(),
            pid=os.getpid(),
            version=__version__,
            capacity=capacity,
            labels=list(labels if labels is not None else settings.runner_labels),
            project_roots=list(
                project_roots if project_roots is not None else settings.runner_project_roots
            ),
        ).checked()

    def start_reaping(self) -> None:
        """An API node that runs no agents still ends those of lost runner hosts
        (every node and host reaps; one wins each lease)."""
        if not self.queueing or self._reaping is not None:
            return
        from agentdeck.runner.reaping import Reaper
        from agentdeck.store.hosts import HostStore

        settings = self.settings
        hosts = HostStore.of(self._store, settings)
        reaper = Reaper(self._store, hosts)

        async def reap() -> None:
            while True:
                await asyncio.sleep(reap_every(settings.runner_heartbeat_seconds))
                try:
                    await reaper.reap()
                except Exception:
                    logger.exception("reaping lost runner hosts' leases failed")

        self._reaping = asyncio.create_task(reap(), name="reaper")

    async def stop_reaping(self) -> None:
        task, self._reaping = self._reaping, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def serve_as_host(self, host: Host) -> RunnerHost:
        """Register ``host`` and claim the queued agents that fit it until the deck
        closes (which hands its suspended agents on to other hosts)."""
        if not self.queueing:
            from agentdeck.errors import UsageError

            raise UsageError(
                "runner hosts need a shared database: set AGENTDECK_DATABASE_URL "
                "to a PostgreSQL database",
                hint="docs/deploy.md sets one up",
            )
        serving = RunnerHost(self._runner, host)
        await serving.start()
        self._host = serving
        return serving
