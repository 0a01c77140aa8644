"""The runner's recording proxy: one server on 127.0.0.1 for all its recorded agents.

Started when the first recorded agent starts, stopped with the runner (or when its
last recorded agent has ended). Each agent gets a route whose path segment is an
unguessable token (``secrets.token_urlsafe``): another local process that finds the
port still cannot reach, or write into, an agent's cassette. The agent's
``ANTHROPIC_BASE_URL`` is ``http://127.0.0.1:<port>/r/<token>``; the upstream is
the URL it would have had otherwise (its scripted model, its template's or
profile's endpoint, ``AGENTDECK_ANTHROPIC_BASE_URL``, else Anthropic's API), reached
as the agent's Claude Code would have reached it: the same CAs, client certificate
and proxy (``agentdeck.egress``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, Literal

import httpx

from agentdeck.core.agent import AgentSpec
from agentdeck.egress import Reach, client, past_proxies
from agentdeck.runner.recording.cassette import CassetteWriter
from agentdeck.runner.recording.proxy import DropConnectionFilter, ProxyApp, Route
from agentdeck.runner.recording.serving import LoopbackServer
from agentdeck.runner.recording.store import Recordings
from agentdeck.settings import Settings

logger = logging.getLogger(__name__)

DEFAULT_UPSTREAM = "https://api.anthropic.com"
Mode = Literal["all", "errors"]
_DROP_FILTER = DropConnectionFilter()


def mode_for(spec: AgentSpec, settings: Settings) -> Mode | None:
    """Whether (and how) an agent is recorded: asked for (``--record``, the API's
    ``record``) keeps its cassette whatever the outcome; else the deck's
    ``AGENTDECK_RECORD``."""
    if spec.record:
        return "all"
    if settings.record == "all":
        return "all"
    if settings.record == "errors":
        return "errors"
    return None


class Recorder:
    """The recording proxy of one runner (see the module)."""

    def __init__(self, settings: Settings, environ: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        # Where the variables of agentdeck.egress are read (None: the daemon's
        # environment, which its agents' Claude Code inherits), at each agent's start.
        self.environ = environ
        self.recordings = Recordings.of(settings)
        self.routes: dict[str, Route] = {}
        self._by_agent: dict[str, tuple[str, Mode]] = {}
        self._serving: LoopbackServer | None = None
        self._clients: dict[Reach, asyncio.Task[httpx.AsyncClient]] = {}
        self._port: int | None = None
        self._watches: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()

    @property
    def url(self) -> str:
        if self._port is None:
            raise RuntimeError("the recording proxy is not started")
        return f"http://127.0.0.1:{self._port}"

    async def start(self) -> None:
        """Listen on a free 127.0.0.1 port (once)."""
        async with self._lock:
            if self._serving is not None:
                return
            uvicorn_logger = logging.getLogger("uvicorn.error")
            if _DROP_FILTER not in uvicorn_logger.filters:
                uvicorn_logger.addFilter(_DROP_FILTER)
            self._serving = LoopbackServer(ProxyApp(self.routes), "recording-proxy")
            self._port = self._serving.start()
            logger.info("recording proxy listening on %s", self.url)

    def _client_for(self, upstream: str) -> asyncio.Task[httpx.AsyncClient]:
        """The client for upstreams reached as ``upstream`` is (its TLS trust, client
        certificate and proxy, from the environment now), made once. One that speaks
        TLS loads its CA files (20-40 ms of CPU): in a thread, begun now, awaited by
        the first request (a second later, once Claude Code has booted), not by the
        agent's start. One that does not (a local model) costs nothing to make."""
        reach = Reach.of(upstream, os.environ if self.environ is None else self.environ)
        task = self._clients.get(reach)
        if task is None:
            timeout = self.settings.api_timeout_seconds or 600.0
            made = (
                asyncio.to_thread(client, timeout, reach) if reach.trust else _made(timeout, reach)
            )
            task = self._clients[reach] = asyncio.create_task(made)
        return task

    def direct_env(self, route: str) -> dict[str, str]:
        """What the agent's environment gains so that it reaches ``route`` directly,
        past the proxies it is told of (``network.past_proxies``)."""
        return past_proxies(route, os.environ if self.environ is None else self.environ)

    async def open(
        self,
        agent_id: str,
        upstream: str,
        mode: Mode,
        start: Callable[[], Awaitable[dict[str, Any]]] | None = None,
    ) -> str:
        """The agent's route (its base URL for Claude Code); its cassette begun, or
        carried on when it already has one (a resumed agent). ``start``: the
        workspace's start state, taken while Claude Code boots; the route forwards
        nothing until it is kept (the agent can change nothing before its model has
        answered once), at most ``START_WAIT`` seconds."""
        await self.start()
        path = self.recordings.path_of(agent_id)
        old = self._by_agent.pop(agent_id, None)
        if old is not None:
            self._drop_route(old[0], None)
        writer = CassetteWriter(path, cap_bytes=self.settings.recording_max_bytes)
        new = writer.written == 0
        if new:
            writer.meta(agent_id, upstream, mode)
        route = Route(agent_id, upstream, writer, self._client_for(upstream))
        if new and start is not None:
            self._watch(self._start_state(route, start))
        else:
            route.ready.set()
        token = secrets.token_urlsafe(24)
        self.routes[token] = route
        self._by_agent[agent_id] = (token, mode)
        return f"{self.url}/r/{token}"

    def follow(self, agent_id: str, finished: asyncio.Event, state: Callable[[], str]) -> None:
        """End the agent's cassette once its session has finished."""
        self._watch(self._follow(agent_id, finished, state))

    def _watch(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._watches.add(task)
        task.add_done_callback(self._watches.discard)

    @staticmethod
    async def _start_state(route: Route, start: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        try:
            state = await start()
        except Exception as exc:  # noqa: BLE001 - a recording never stops the agent
            logger.warning("agent %s: its start state was not kept: %s", route.agent_id, exc)
            state = {"error": str(exc)[:200]}
        finally:
            route.ready.set()
        route.writer.note({"kind": "start", **state})

    async def _follow(
        self, agent_id: str, finished: asyncio.Event, state: Callable[[], str]
    ) -> None:
        try:
            await finished.wait()
        except asyncio.CancelledError:
            self.finish(agent_id, None)
            raise
        self.finish(agent_id, state())

    def finish(self, agent_id: str, state: str | None) -> Path | None:
        """Close the agent's cassette with how its run ended; in ``errors`` mode a
        run that did not end in error leaves none. The cassette kept, if any."""
        held = self._by_agent.pop(agent_id, None)
        if held is None:
            return None
        token, mode = held
        return self._drop_route(token, state, keep=mode == "all" or state == "error")

    def _drop_route(self, token: str, state: str | None, *, keep: bool = True) -> Path | None:
        route = self.routes.pop(token, None)
        if route is None:
            return None
        route.writer.close(state)
        if route.writer.broken is not None:
            logger.warning(
                "agent %s: its recording stopped: %s", route.agent_id, route.writer.broken
            )
        if keep:
            return route.writer.path
        with contextlib.suppress(FileNotFoundError):
            route.writer.path.unlink()
        return None

    async def close(self) -> None:
        """Stop serving; cassettes still open are closed as cut short."""
        for watch in list(self._watches):
            watch.cancel()
        for watch in list(self._watches):
            with contextlib.suppress(asyncio.CancelledError):
                await watch
        for agent_id in list(self._by_agent):
            self.finish(agent_id, None)
        serving, clients = self._serving, list(self._clients.values())
        self._serving, self._clients, self._port = None, {}, None
        if serving is not None:
            await serving.stop()
        for made in clients:
            with contextlib.suppress(Exception):
                await (await made).aclose()


async def _made(timeout: float, reach: Reach) -> httpx.AsyncClient:
    return client(timeout, reach)


async def start_state(
    cwd: Path, checkpoint: Callable[[], Awaitable[Any]] | None = None
) -> dict[str, Any]:
    """The workspace as the agent found it: its git HEAD, if it is in a repository,
    and a checkpoint of all of it (``checkpoint``: the runner's, whose lock for the
    agent is taken at once, so a tool call's own checkpoint comes after it)."""
    state: dict[str, Any] = {"cwd": str(cwd), "ts": time.time()}
    # Both at once: each is a few git processes, waited for by the first request.
    head, taken = await asyncio.gather(_git_head(cwd), _checkpointed(cwd, checkpoint))
    return {**state, "git_head": head, **taken}


async def _git_head(cwd: Path) -> str | None:
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", "-C", str(cwd), "rev-parse", "--verify", "-q", "HEAD",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        try:
            async with asyncio.timeout(10):
                out, _ = await proc.communicate()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            out = b""
    except OSError as exc:
        logger.debug("no git HEAD for %s: %s", cwd, exc)
        return None
    return (out.decode().strip() or None) if proc.returncode == 0 else None


async def _checkpointed(
    cwd: Path, checkpoint: Callable[[], Awaitable[Any]] | None
) -> dict[str, Any]:
    if checkpoint is None:
        return {}
    try:
        return {"checkpoint": (await checkpoint()).to_dict()}
    except Exception as exc:  # noqa: BLE001 - a recording never stops the agent
        logger.warning("the start state of %s was not checkpointed: %s", cwd, exc)
        return {"checkpoint_error": str(exc)[:200]}
