"""Socket Mode with a limit: slack_sdk's client, whose connecting is ours.

slack_sdk's own ``connect`` retries for ever, logging a traceback each time; its
rate-limit path waits as long as Slack says, for ever too. Here one try is: a
new Socket Mode address (``apps.connections.open``), then the websocket, both
within the try's deadline; a failed try is one log line of ``reconnect.Attempts``
and the bridge stops after the last (``run`` raises ``PlatformUnreachable``),
also when the connection drops later and cannot be made again. A connection made
starts the count anew. A token Slack refuses stops the bridge at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import aiohttp
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.web.async_client import AsyncWebClient

from agentdeck.bridges.reconnect import Attempts, Backoff
from agentdeck.errors import AgentdeckError, ConfigError

logger = logging.getLogger(__name__)

# Slack's answers another try may get past (its own trouble, its rate limit).
TRANSIENT_ERRORS = frozenset(
    {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, SlackApiError):
        status = getattr(exc.response, "status_code", 0) or 0
        data = exc.response.data if isinstance(exc.response.data, dict) else {}
        error = data.get("error")
        return status >= 500 or status == 429 or error in TRANSIENT_ERRORS
    return isinstance(exc, OSError | aiohttp.ClientError)


def _refused(exc: SlackApiError) -> AgentdeckError:
    data = exc.response.data if isinstance(exc.response.data, dict) else {}
    error = str(data.get("error") or f"HTTP {exc.response.status_code}")
    if error in ("invalid_auth", "not_authed", "token_revoked", "account_inactive"):
        return ConfigError(
            f"Slack refused the app-level token ({error})",
            hint="check AGENTDECK_SLACK_APP_TOKEN (an xapp- token with connections:write)",
        )
    return AgentdeckError(f"Slack refused to open a Socket Mode connection ({error})")


class BoundedSocketModeClient(SocketModeClient):
    """slack_sdk's aiohttp Socket Mode client, connecting with ``Attempts``."""

    def __init__(self, app_token: str, web_client: AsyncWebClient, backoff: Backoff) -> None:
        super().__init__(app_token, logger=logger, web_client=web_client)
        self.backoff = backoff
        self.attempts = Attempts("Slack", backoff)
        self._stopped = asyncio.Event()
        self._gave_up: Exception | None = None

    async def issue_new_wss_url(self) -> str:
        """One try; the caller retries (slack_sdk's would wait out a rate limit
        for as long as Slack asks, as often as it asks)."""
        response = await self.web_client.apps_connections_open(app_token=self.app_token)
        return str(response["url"])

    async def connect(self) -> None:
        """Tries until connected, or until the last try failed: then the bridge is
        stopped (``run`` raises why). Never raises itself: the library's tasks that
        call this on a drop would log the error again."""
        while not self.closed:
            what = "asking for a Socket Mode address"
            try:
                async with asyncio.timeout(self.backoff.timeout):
                    self.wss_uri = await self.issue_new_wss_url()
                    what = "the Socket Mode connection"
                    await self._open()
                self.attempts.succeeded()
                logger.info("Slack: connected over Socket Mode")
                return
            except Exception as exc:  # noqa: BLE001 - handed to run(), which raises it
                if self.closed:
                    return
                if not _transient(exc):
                    self._stop(_refused(exc) if isinstance(exc, SlackApiError) else exc)
                    return
                try:
                    await self.attempts.failed(what, exc)
                except AgentdeckError as gave_up:
                    self._stop(gave_up)
                    return

    def _stop(self, error: Exception) -> None:
        """Stop for good (the library's monitor stops reconnecting); ``run`` raises
        ``error``."""
        self.closed = True
        self.auto_reconnect_enabled = False
        self._gave_up = error
        self._stopped.set()

    async def _open(self) -> None:
        """The websocket to ``wss_uri``, and the library's tasks that read it and
        watch it (what slack_sdk's ``connect`` does once it has a session)."""
        old = self.current_session
        self.auto_reconnect_enabled = False
        if old is not None:
            with contextlib.suppress(Exception):
                await old.close()
        if self.aiohttp_client_session.closed:
            self.aiohttp_client_session = aiohttp.ClientSession()
        assert self.wss_uri is not None
        self.current_session = await self.aiohttp_client_session.ws_connect(
            self.wss_uri,
            autoping=False,
            heartbeat=self.ping_interval,
            proxy=self.proxy,
            ssl=self.web_client.ssl if self.web_client.ssl is not None else True,
        )
        self.auto_reconnect_enabled = self.default_auto_reconnect_enabled
        self.stale = False
        await self.current_session.ping(f"sdk-ping-pong:{time.time()}".encode())
        if self.current_session_monitor is not None:
            self.current_session_monitor.cancel()
        self.current_session_monitor = asyncio.ensure_future(self.monitor_current_session())
        if self.message_receiver is not None:
            self.message_receiver.cancel()
        self.message_receiver = asyncio.ensure_future(self.receive_messages())

    async def connect_to_new_endpoint(self, force: bool = False) -> None:
        """A dropped connection made again (the library's monitor calls this)."""
        async with self.connect_operation_lock:
            if force or not await self.is_connected():
                await self.connect()

    async def run(self) -> None:
        """Connect, then serve until closed; raise what stopped it for good."""
        await self.connect()
        await self._stopped.wait()
        if self._gave_up is not None:
            raise self._gave_up


class Handler(AsyncSocketModeHandler):
    """bolt's Socket Mode handler on a ``BoundedSocketModeClient``."""

    def __init__(self, app: AsyncApp, client: BoundedSocketModeClient) -> None:
        self.app = app
        self.app_token = client.app_token
        self.client = client
        client.socket_mode_request_listeners.append(self.handle)  # type: ignore[arg-type]
