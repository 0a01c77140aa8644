"""Lifecycle of the scripted model: uvicorn in the caller's loop, in a thread, or blocking."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType

import uvicorn

from agentdeck.errors import ConfigError, NotFound, ScenarioError
from agentdeck.mockmodel.app import DropConnectionFilter, MockApp
from agentdeck.mockmodel.faults import FaultPlan
from agentdeck.mockmodel.loader import builtin_scenario_names, load_scenario
from agentdeck.mockmodel.recording import RecordedRequest, RequestLog
from agentdeck.mockmodel.scenario import Scenario

logger = logging.getLogger(__name__)

START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0
_DROP_FILTER = DropConnectionFilter()


class _EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves the host process's signal handlers alone, and
    stops as soon as it is asked to: uvicorn looks at ``should_exit`` every 0.1 s
    and then waits another 0.1 s for connections it asked to close, ~0.2 s at
    the end of every ``agentdeck run --scenario`` when nobody is connected."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.wake = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def main_loop(self) -> None:
        """uvicorn's loop (its ticks update the Date header), woken by ``stop``."""
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), 0.1)
            should_exit = await self.on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's graceful shutdown while a connection or a response is open;
        with none, the listening sockets closed and nothing to wait for."""
        if self.server_state.connections or self.server_state.tasks:
            await super().shutdown(sockets)
            return
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for server in self.servers:
            await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()


class MockModel:
    """A scripted Anthropic Messages API on ``host:port`` (port 0 picks a free one)."""

    def __init__(
        self, scenarios: Sequence[Scenario], host: str = "127.0.0.1", port: int = 0
    ) -> None:
        seen: dict[str, Scenario] = {}
        for scenario in scenarios:
            if scenario.name in seen:
                other = seen[scenario.name].source
                problem = f"scenario name {scenario.name!r} is already used by {other}"
                raise ScenarioError(scenario.source, problem)
            seen[scenario.name] = scenario
        self.scenarios = list(scenarios)
        self.host = host
        self.port = port
        self._log = RequestLog()
        self._server: _EmbeddedServer | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping: asyncio.Event | None = None
        self._recorded: asyncio.Event | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("MockModel is not started")
        return f"http://{self.host}:{self.port}"

    def url_for(self, scenario_name: str) -> str:
        """The base URL that routes every request to ``scenario_name``."""
        if all(s.name != scenario_name for s in self.scenarios):
            known = ", ".join(s.name for s in self.scenarios)
            raise NotFound("scenario", scenario_name, hint=f"loaded: {known}")
        return f"{self.url}/s/{scenario_name}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far."""
        return self._log.snapshot()

    def clear_requests(self) -> None:
        self._log.clear()

    async def wait_for_requests(self, count: int, *, within: float = 10.0) -> list[RecordedRequest]:
        """Wait until at least ``count`` requests were recorded (in the server's loop).

        Raises ``TimeoutError`` after ``within`` seconds.
        """
        async with asyncio.timeout(within):
            while True:
                changed = self._recorded
                requests = self._log.snapshot()
                if len(requests) >= count or changed is None:
                    return requests
                await changed.wait()

    def _notify_recorded(self) -> None:
        changed, self._recorded = self._recorded, asyncio.Event()
        if changed is not None:
            changed.set()

    async def start(self) -> None:
        """Bind and serve in the running loop; returns once the port is known."""
        if self._server is not None:
            raise RuntimeError("MockModel already started")
        uvicorn_logger = logging.getLogger("uvicorn.error")
        if _DROP_FILTER not in uvicorn_logger.filters:
            uvicorn_logger.addFilter(_DROP_FILTER)
        self._stopping = asyncio.Event()
        self._recorded = asyncio.Event()
        app = MockApp(self.scenarios, self._log, FaultPlan(), self._stopping, self._notify_recorded)
        config = uvicorn.Config(
            app,
            host=self.host,
            port=self.port,
            http="h11",
            lifespan="off",
            log_config=None,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
        )
        self._server = server = _EmbeddedServer(config)
        self._task = task = asyncio.create_task(self._serve(server), name="mockmodel")
        async with asyncio.timeout(START_TIMEOUT):
            while not server.started:
                if task.done():
                    self._server = None
                    raise ConfigError(
                        f"the mock model could not listen on {self.host}:{self.port}",
                        hint="is the port already in use?",
                    )
                await asyncio.sleep(0.01)
        self.port = server.servers[0].sockets[0].getsockname()[1]
        logger.info("mock model listening on %s", self.url)

    @staticmethod
    async def _serve(server: uvicorn.Server) -> None:
        try:
            await server.serve()
        except SystemExit:  # uvicorn exits when it cannot bind
            logger.error("mock model server failed to start")

    async def stop(self) -> None:
        """Stop serving; hanging and slow responses end at once. Bounded by ``STOP_TIMEOUT``."""
        timeout = STOP_TIMEOUT
        server, task = self._server, self._task
        if server is None or task is None:
            return
        assert self._stopping is not None
        self._stopping.set()
        server.should_exit = True
        server.wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except TimeoutError:
            logger.warning("mock model did not stop within %.1f s; cancelling", timeout)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        finally:
            self._server = None
            self._task = None

    async def __aenter__(self) -> MockModel:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @contextlib.contextmanager
    def running_in_thread(self) -> Iterator[MockModel]:
        """Serve from a private thread and event loop, for synchronous callers."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="mockmodel-loop", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result(START_TIMEOUT + 1)
            yield self
        finally:
            try:
                asyncio.run_coroutine_threadsafe(self.stop(), loop).result(STOP_TIMEOUT + 2)
                asyncio.run_coroutine_threadsafe(loop.shutdown_asyncgens(), loop).result(2)
            finally:
                loop.call_soon_threadsafe(loop.stop)
                thread.join(STOP_TIMEOUT)
                loop.close()


def serve(host: str, port: int, scenario_paths: list[str]) -> None:
    """Run until SIGINT/SIGTERM; prints the URL of the server and of each scenario."""
    paths: Sequence[str | Path] = scenario_paths or builtin_scenario_names()
    scenarios = [load_scenario(p) for p in paths]
    asyncio.run(_serve_forever(MockModel(scenarios, host=host, port=port)))


async def _serve_forever(mm: MockModel) -> None:
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    try:
        await mm.start()
        print(f"mock model listening on {mm.url}", flush=True)  # noqa: T201
        for scenario in mm.scenarios:
            print(f"  {scenario.name}: {mm.url_for(scenario.name)}", flush=True)  # noqa: T201
        await done.wait()
    finally:
        await mm.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
