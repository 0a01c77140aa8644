"""Run the daemon: one process, one home, until SIGINT/SIGTERM/SIGHUP.

Start-up: take the home's lock (a second daemon is refused), make the token,
open the Deck and reconcile agents a crash left behind, bind, then publish the
address in ``daemon.json``. Shutdown: stop accepting requests, bring agents to
a safe stop, flush the log, remove ``daemon.json``, release the lock.

The daemon does not know the web layer: what it serves over HTTP is a ``Mount``
handed in by the composition above both (``agentdeck.serve``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import uvicorn

from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.deck import Deck
from agentdeck.daemon.health import LoopMonitor
from agentdeck.daemon.home import (
    DaemonInfo,
    DaemonLock,
    clear_info,
    ensure_token,
    write_info,
)
from agentdeck.daemon.watchdog import Watchdog
from agentdeck.errors import ConfigError, ShuttingDown
from agentdeck.hooks.config import write_client_config
from agentdeck.hooks.socket_server import HookSocketServer
from agentdeck.runner import procs
from agentdeck.settings import Settings
from agentdeck.telemetry.push import MetricPush
from agentdeck.telemetry.push import start as start_metric_push
from agentdeck.telemetry.service import Telemetry
from agentdeck.telemetry.service import start as start_telemetry

logger = logging.getLogger(__name__)

Ready = Callable[[Deck, DaemonInfo, str], Awaitable[None]]


@dataclass(frozen=True)
class Mounted:
    """The ASGI app the daemon serves, and how to end its open responses (event
    streams) when shutting down: uvicorn waits for them before it stops."""

    app: Any
    close_streams: Callable[[], None]


class Mount(Protocol):
    """Builds what the daemon serves over HTTP on its Deck."""

    def __call__(self, deck: Deck, *, token: str, settings: Settings) -> Mounted: ...


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the caller owns signals."""

    def install_signal_handlers(self) -> None:  # uvicorn < 0.29
        return

    def capture_signals(self):  # type: ignore[no-untyped-def]  # uvicorn >= 0.29
        import contextlib

        return contextlib.nullcontext()


async def serve(
    settings: Settings,
    mount: Mount,
    *,
    on_ready: Ready | None = None,
    stop: asyncio.Event | None = None,
    runner: bool = True,
) -> None:
    """Serve ``mount``'s app until ``stop`` is set (or SIGINT/SIGTERM/SIGHUP when
    ``stop`` is None). On a deck with runner hosts (PostgreSQL) the daemon runs
    agents as one too, unless ``runner`` is False (``up --no-runner``)."""
    settings.ensure_home()
    lock = DaemonLock(settings)
    lock.acquire()
    try:
        token = ensure_token(settings)
        deck = await open_deck(settings)
        telemetry: Telemetry | None = None
        metrics: MetricPush | None = None
        try:
            # Before the reconciling: the agents it resumes are followed too.
            telemetry = await start_telemetry(deck, settings)
            metrics = await start_metric_push(deck, telemetry.tally, settings)
            if await deck.bootstrap(token) is not None:
                logger.info("no users yet: user 'admin' now owns the token file's token")
            reconciled = await deck.reconcile()
            if reconciled:
                logger.warning(
                    "reconciled %d agent(s) left live by an earlier run", len(reconciled)
                )
            if deck.queueing and runner:
                # Every directory of this machine, unless the settings name some.
                roots = settings.runner_project_roots or ["/"]
                await deck.serve_as_host(deck.host_of_settings(project_roots=roots))
            else:
                deck.start_reaping()  # a node that runs nothing still ends lost hosts' agents
            deck.start_scheduling()  # what came due while it was down first (catch-up)
            hooks = await _serve_hooks(settings, deck)
            try:
                await _serve_app(settings, deck, mount, token, on_ready, stop)
            finally:
                await hooks.close()
        finally:
            clear_info(settings)
            if metrics is not None:
                await metrics.stop()  # a last push, while the store can still be read
            await deck.close()
            if telemetry is not None:
                await telemetry.stop()  # the spans still open end; what is queued is sent
    finally:
        lock.release()


async def _serve_hooks(settings: Settings, deck: Deck) -> HookSocketServer:
    """The Unix socket the hook client of hand-started sessions talks to, and
    the deadline and fallbacks it reads (the settings may have changed)."""
    write_client_config(settings, deck.profile().default)
    server = HookSocketServer()
    await server.start(settings.socket_path, deck.handle_hook)
    logger.info("hook socket listening on %s", settings.socket_path)
    return server


async def _serve_app(
    settings: Settings,
    deck: Deck,
    mount: Mount,
    token: str,
    on_ready: Ready | None,
    stop: asyncio.Event | None,
) -> None:
    mounted = mount(deck, token=token, settings=settings)
    config = uvicorn.Config(
        mounted.app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=3,
        timeout_keep_alive=30,
    )
    server = _Server(config)
    stop = stop or _signal_event()
    sock = bind(settings.host, settings.port)
    # The loop watches itself (readiness, the board); under systemd each of its
    # wake-ups feeds the watchdog, so a hung loop is restarted (daemon.watchdog).
    monitor = LoopMonitor()
    watchdog = Watchdog.from_environ(os.environ)
    if watchdog is not None:
        monitor.on_tick(watchdog.tick)
    monitor.start()
    deck.watch_loop(monitor)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="uvicorn")
    try:
        while not server.started:
            if task.done():
                await task
                raise ConfigError("the web server stopped during start-up")
            await asyncio.sleep(0.02)
        sockname = sock.getsockname()
        info = DaemonInfo(
            pid=os.getpid(), host=settings.host, port=int(sockname[1]), started_at=time.time()
        )
        write_info(settings, info)
        logger.info("agentdeck daemon listening on %s", info.url)
        if watchdog is not None:
            watchdog.ready(f"listening on {info.url}")
        await deck.start_notifying(info.url)
        # What the caller does once the daemon listens (the demo starts its crew) runs
        # beside it: a stop asked for meanwhile cancels it, rather than waiting for it.
        readying: asyncio.Future[None] | None = (
            asyncio.ensure_future(on_ready(deck, info, token)) if on_ready is not None else None
        )
        sweeper = asyncio.create_task(_sweep(deck), name="approval-sweeper")
        stopper = asyncio.create_task(stop.wait())
        waiting: set[asyncio.Future[Any]] = {task, stopper}
        if readying is not None:
            waiting.add(readying)
        while True:
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if readying is not None and readying in done:
                waiting.discard(readying)
                readying.result()  # a failure of the caller's fails the daemon, as before
            if task in done or stopper in done:
                break
        stopper.cancel()
        sweeper.cancel()
        # No agent starts from now on and those starting stop now, so the requests
        # creating them answer at once (503) before the web server stops.
        await deck.refuse_starts()
        if readying is not None:  # over, whether it ended meanwhile or not
            readying.cancel()
            (outcome,) = await asyncio.gather(readying, return_exceptions=True)
            if isinstance(outcome, Exception) and not isinstance(outcome, ShuttingDown):
                logger.warning("stopped while getting ready: %s", outcome)
    finally:
        # Stop accepting requests and end open streams, then the caller stops agents.
        if watchdog is not None:
            watchdog.stopping()
        await monitor.stop()
        mounted.close_streams()  # uvicorn waits for open responses before it stops
        server.should_exit = True
        await deck.stop_feeds()
        await asyncio.wait({task}, timeout=10)


async def _sweep(deck: Deck, every: float = 5.0) -> None:
    """Deny approval requests nobody waits for once their deadline passes."""
    while True:
        try:
            await deck.sweep()
        except Exception:
            logger.exception("approval sweep failed")
        await asyncio.sleep(every)


def bind(host: str, port: int) -> socket.socket:
    """Our own listening socket, so a bind error is ours to report (uvicorn
    would ``sys.exit`` from inside the event loop)."""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
            sock.listen(128)
        except OSError:
            sock.close()
            raise
    except OSError as exc:
        raise ConfigError(
            f"could not listen on {host}:{port}: {exc.strerror or exc}",
            hint="is the port in use? choose another with --port or AGENTDECK_PORT",
        ) from exc
    return sock


def _signal_event() -> asyncio.Event:
    """Set by SIGINT, SIGTERM (``agentdeck down``) or SIGHUP (the terminal it ran
    in closed; not under ``nohup``): each is a stop, agents first. Left to their
    default, the last two would end the daemon at once, its agents' processes
    (a sandbox leads a session of its own) running on without it."""
    import signal

    event = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stop(sig: signal.Signals) -> None:
        if sig == signal.SIGHUP:
            procs.leave_terminal()
        if not event.is_set():
            logger.warning("got %s: stopping", sig.name)
        event.set()

    for sig in (signal.SIGINT, *procs.stop_signals()):
        loop.add_signal_handler(sig, stop, sig)
    return event
