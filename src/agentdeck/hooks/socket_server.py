"""The daemon's end of the hook socket: one request line in, one reply line out.

``HookSocketServer`` listens on a Unix stream socket (mode 0600) and hands each
request to a ``HookHandler``. Every connection runs in its own tracked task;
reading a request has a deadline and a size limit; a malformed request gets a
one-line stderr answer; a handler that raises gets a fallback answer (the client
then does what ``hooks.json`` says), and the server goes on serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
import stat
from pathlib import Path

from agentdeck.errors import ConfigError
from agentdeck.hooks.protocol import (
    HookHandler,
    HookReply,
    MalformedRequest,
    decode_request,
    encode_pending,
    encode_reply,
)

logger = logging.getLogger(__name__)

MAX_REQUEST = 64 * 1024 * 1024  # PostToolUse carries the tool's output
READ_DEADLINE = 10.0  # seconds to receive one request line
WRITE_DEADLINE = 10.0  # seconds to hand the reply over and close
CLOSE_DEADLINE = 5.0  # seconds close() waits for cancelled connections
# A handler stuck past every client's deadline helps nobody: its session's later
# events wait behind it. Clients gave up long before (their deadline is ≤ 50 s).
HANDLER_DEADLINE = 60.0
MAX_CONNECTIONS = 256  # beyond this, a request is answered "busy" at once (→ fallback)
SKIP_CHUNK = 1024 * 1024
MAX_SUN_PATH = 107  # AF_UNIX path bytes, without the terminating NUL


class HookSocketServer:
    def __init__(
        self,
        *,
        read_deadline: float = READ_DEADLINE,
        max_request: int = MAX_REQUEST,
        handler_deadline: float = HANDLER_DEADLINE,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.read_deadline = read_deadline
        self.max_request = max_request
        self.handler_deadline = handler_deadline
        self.max_connections = max_connections
        self.path: Path | None = None
        self._server: asyncio.AbstractServer | None = None
        self._handler: HookHandler | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, path: Path, handler: HookHandler) -> None:
        """Listen at ``path``, replacing a stale socket file left by a dead daemon."""
        if self._server is not None:
            raise RuntimeError("the hook socket server is already started")
        remove_stale_socket(path)
        sock = bind_unix(path)
        try:
            self._server = await asyncio.start_unix_server(
                self._accept, sock=sock, limit=self.max_request + 1
            )
        except BaseException:
            sock.close()
            path.unlink(missing_ok=True)
            raise
        self.path = path
        self._handler = handler
        logger.info("hook socket listening at %s", path)

    async def close(self) -> None:
        """Stop listening, cancel open connections (bounded), remove the socket file."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=CLOSE_DEADLINE)
            if pending:
                logger.warning("%d hook connections did not close in time", len(pending))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CLOSE_DEADLINE):
                await server.wait_closed()
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            logger.info("hook socket closed")

    @property
    def connections(self) -> int:
        """Connections being served right now."""
        return len(self._connections)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.get_running_loop().create_task(
            self._serve(reader, writer), name="hook-connection"
        )
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if len(self._connections) > self.max_connections:
                logger.warning("hook request refused: %d connections open", self.max_connections)
                await self._skip_line(reader)  # unread data would reset the connection
                reply = HookReply.fall_back("the daemon is busy")
            else:
                reply = await self._answer(reader, writer)
            writer.write(encode_reply(reply))
            async with asyncio.timeout(WRITE_DEADLINE):
                await writer.drain()
        except (ConnectionError, TimeoutError) as exc:
            # The client gave up (its own deadline) or vanished: it applies its fallback.
            logger.debug("hook client went away: %r", exc)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, TimeoutError):
                async with asyncio.timeout(WRITE_DEADLINE):
                    await writer.wait_closed()

    async def _answer(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> HookReply:
        try:
            async with asyncio.timeout(self.read_deadline):
                line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # EOF before a newline: judge what came
            line = exc.partial
        except TimeoutError:
            logger.warning("hook request not received within %gs", self.read_deadline)
            return HookReply.fall_back(f"request not received within {self.read_deadline:g} s")
        except asyncio.LimitOverrunError:  # the line is longer than the limit
            size = self.max_request // (1024 * 1024)
            logger.warning("hook request over %d MiB refused", size)
            await self._skip_line(reader)
            return HookReply.fall_back(f"request larger than {size} MiB")
        try:
            request = decode_request(line)
        except MalformedRequest as exc:
            logger.warning("malformed hook request: %s", exc)
            return HookReply(stderr=f"agentdeck: {exc}")
        assert self._handler is not None

        async def pending(seconds: float) -> None:
            writer.write(encode_pending(seconds))
            async with asyncio.timeout(WRITE_DEADLINE):
                await writer.drain()

        request = dataclasses.replace(request, pending=pending)
        try:
            async with asyncio.timeout(self.handler_deadline):
                return await self._handler(request)
        except TimeoutError:
            logger.error(
                "hook handler for %s took over %gs",
                request.name or "an event",
                self.handler_deadline,
            )
            return HookReply.fall_back(f"no decision within {self.handler_deadline:g} s")
        except Exception as exc:  # top-level for this request: the daemon goes on
            logger.exception("hook handler failed on %s", request.name or "an event")
            return HookReply.fall_back(f"the daemon's hook handler failed: {type(exc).__name__}")

    async def _skip_line(self, reader: asyncio.StreamReader) -> None:
        """Drop the rest of an oversize line (what is buffered, then what is
        still coming), so that the client gets to read our answer instead of a
        reset."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.read_deadline):
                while chunk := await reader.read(SKIP_CHUNK):
                    if b"\n" in chunk:
                        return


def remove_stale_socket(path: Path) -> None:
    """Remove a socket file a dead daemon left; refuse to remove anything else.

    The daemon holds its home's lock before it gets here, so a socket file at
    ``path`` cannot belong to a live daemon of this home.
    """
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ConfigError(
            f"{path} exists and is not a socket",
            hint="move it away; agentdeck listens for its hooks there",
        )
    logger.info("removing stale hook socket %s", path)
    path.unlink(missing_ok=True)


def bind_unix(path: Path) -> socket.socket:
    """A listening-ready socket bound at ``path``, mode 0600 from the start.

    On Linux a socket's mode before ``bind`` becomes the file's mode, so the
    file never exists with a wider one. A path longer than AF_UNIX allows is
    bound through ``/proc/self/fd/<fd of its directory>``.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.fchmod(sock.fileno(), 0o600)
        if len(os.fsencode(path)) <= MAX_SUN_PATH:
            sock.bind(str(path))
        else:
            dir_fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
            try:
                sock.bind(f"/proc/self/fd/{dir_fd}/{path.name}")
            finally:
                os.close(dir_fd)
        path.chmod(0o600)
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen for hooks at {path}: {exc.strerror or exc}",
            hint="check that AGENTDECK_HOME is a writable directory",
        ) from exc
    return sock
