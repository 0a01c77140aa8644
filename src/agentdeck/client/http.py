"""The asynchronous client (httpx): for the TUI, the bridges and the CLI's commands
that live in an event loop (merges, worktrees, the orchestrator's MCP server).

``DaemonHTTP`` is one daemon's API at a URL with the home's token: ``call`` for a
REST call (the JSON answer, or the daemon's error rebuilt as the class it was
raised as, ``errors.from_body``), ``event_stream`` for one connection to the event
stream, read by ``sse``. A daemon that does not answer is ``DaemonUnavailable``.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from agentdeck.client.sse import EventStreamReader, ServerEvent
from agentdeck.errors import DaemonUnavailable, from_body

CALL_SECONDS = 30.0
CONNECT_SECONDS = 3.0
# The daemon pings an idle stream every 15 s: a stream silent for longer is dead.
STREAM_READ_SECONDS = 45.0
UNREACHABLE_HINT = "`agentdeck status` checks it; `agentdeck down` stops it"


class DaemonHTTP:
    """One daemon's API. ``client`` says who calls (``X-Agentdeck-Client``: cli,
    tui, bridge), for the audit log."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        client: str,
        read_seconds: float = CALL_SECONDS,
        connect_seconds: float = CONNECT_SECONDS,
    ) -> None:
        self.url = url.rstrip("/")
        self.connect_seconds = connect_seconds
        self._http = httpx.AsyncClient(
            base_url=self.url,
            timeout=httpx.Timeout(read_seconds, connect=connect_seconds),
            headers={"Authorization": f"Bearer {token}", "X-Agentdeck-Client": client},
        )
        self._also: dict[str, str] = {}  # sent with every call (``sending``)
        self._owns_connection = True

    def sending(self, headers: Mapping[str, str]) -> DaemonHTTP:
        """The same connection (none is opened), every call and stream also sending
        ``headers`` (over the caller's own); closing it leaves the connection to
        this one."""
        view = copy.copy(self)
        view._also = {**self._also, **headers}
        view._owns_connection = False
        return view

    async def aclose(self) -> None:
        if self._owns_connection:
            await self._http.aclose()

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        no_read_limit: bool = False,
    ) -> Any:
        """One API call: the JSON answer (None for an empty one), or the daemon's
        error as the class it raised. ``timeout`` (seconds) replaces the client's
        own; ``no_read_limit`` is for a call that waits its turn (a merge)."""
        sent = {**(headers or {}), **self._also}
        kwargs: dict[str, Any] = {"json": json, "params": params, "headers": sent}
        if no_read_limit:
            kwargs["timeout"] = httpx.Timeout(None, connect=self.connect_seconds)
        elif timeout is not None:
            kwargs["timeout"] = timeout
        try:
            try:
                response = await self._http.request(method, path, **kwargs)
            except httpx.RemoteProtocolError:
                # A kept-alive connection the daemon closed while it was idle (uvicorn
                # closes them after 5 s): a read is asked once more, on a new one; a
                # write is never sent twice.
                if method != "GET":
                    raise
                response = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise self.unreachable(exc) from exc
        if response.status_code >= 400:
            raise from_body(response.status_code, response.content, path)
        return response.json() if response.content else None

    @contextlib.asynccontextmanager
    async def event_stream(
        self,
        *,
        after: int,
        params: Mapping[str, Any] | None = None,
        read_seconds: float | None = STREAM_READ_SECONDS,
    ) -> AsyncIterator[AsyncIterator[ServerEvent]]:
        """One connection to ``/api/events/stream``, resumed after event ``after``
        (``Last-Event-ID``): its events as they come, until the daemon ends it. Any
        failure of the connection is ``DaemonUnavailable``; a stream silent for
        ``read_seconds`` (None: for ever) has failed."""
        headers = {"Last-Event-ID": str(after), "Accept": "text/event-stream", **self._also}
        timeout = httpx.Timeout(
            connect=self.connect_seconds, read=read_seconds, write=10.0, pool=self.connect_seconds
        )
        path = "/api/events/stream"
        try:
            async with self._http.stream(
                "GET", path, params=params, headers=headers, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    raise from_body(response.status_code, await response.aread(), path)
                yield _events(response)
        except httpx.HTTPError as exc:
            raise DaemonUnavailable(f"lost the daemon's event stream: {exc!r}") from exc

    def unreachable(self, exc: BaseException) -> DaemonUnavailable:
        return DaemonUnavailable(
            f"the agentdeck daemon at {self.url} did not answer: {exc!r}", hint=UNREACHABLE_HINT
        )


async def _events(response: httpx.Response) -> AsyncIterator[ServerEvent]:
    reader = EventStreamReader()
    async for chunk in response.aiter_bytes():
        for event in reader.feed(chunk):
            yield event
