"""The ASGI application of the scripted model: routing, replies and faults on the wire."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from agentdeck.mockmodel.encoding import (
    MALFORMED_FRAME,
    PING,
    STREAM_CHUNK,
    Reply,
    content_blocks,
    error_body,
    error_type,
    estimate_tokens,
    fallback_blocks,
    new_id,
    sse_frame,
)
from agentdeck.mockmodel.faults import FaultPlan
from agentdeck.mockmodel.recording import (
    RecordedRequest,
    RequestLog,
    credential_digest,
    redact_headers,
)
from agentdeck.mockmodel.scenario import Fault, Scenario
from agentdeck.mockmodel.selection import Selection, find_cwd, select

logger = logging.getLogger(__name__)

_PREFIX = re.compile(r"^/s/([^/]+)(/.*)?$")
_MODELS = {
    "data": [{"type": "model", "id": "claude-mock", "display_name": "Scripted mock model"}],
    "has_more": False,
    "first_id": "claude-mock",
    "last_id": "claude-mock",
}


class DropConnection(Exception):
    """Raised after the response started: uvicorn then closes the socket mid-stream."""


class DropConnectionFilter(logging.Filter):
    """Keeps uvicorn from logging our deliberate disconnects as application errors."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, DropConnection)


class _Exchange:
    """One request in flight: knows when the client went away or the server stops."""

    def __init__(self, scope: Scope, receive: Receive, send: Send, stopping: asyncio.Event) -> None:
        self.scope = scope
        self.send = send
        self._receive = receive
        self.stopping = stopping
        self.gone = asyncio.Event()
        self._watcher: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[_Exchange]:
        """Watch for the client's disconnect (call after the body was read)."""
        self._watcher = asyncio.create_task(self._watch())
        try:
            yield self
        finally:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self.gone.set()

    async def pause(self, seconds: float | None) -> bool:
        """Sleep (``None``: forever); ``False`` if the client left or the server stops first."""
        waiters = [asyncio.ensure_future(e.wait()) for e in (self.gone, self.stopping)]
        try:
            done, _ = await asyncio.wait(waiters, timeout=seconds, return_when="FIRST_COMPLETED")
        finally:
            for waiter in waiters:
                waiter.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)
        return not done

    async def start_stream(self, request_id: str) -> None:
        headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"request-id", request_id.encode()),
        ]
        await self.send({"type": "http.response.start", "status": 200, "headers": headers})

    async def answer(self, response: Response) -> None:
        await response(self.scope, self._receive, self.send)

    async def write(self, data: bytes, *, more: bool = True) -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": more})


class MockApp:
    """Raw ASGI so that faults can misbehave at the byte level."""

    def __init__(
        self,
        scenarios: Sequence[Scenario],
        log: RequestLog,
        plan: FaultPlan,
        stopping: asyncio.Event,
        on_record: Callable[[], None] = lambda: None,
    ) -> None:
        self.scenarios = list(scenarios)
        self.on_record = on_record
        self.log = log
        self.plan = plan
        self.stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        path, name = scope["path"], None
        prefixed = _PREFIX.match(path)
        if prefixed:
            name, path = prefixed.group(1), prefixed.group(2) or "/"
        method = request.method
        if method == "POST" and path == "/v1/messages":
            await self._messages(request, name, send)
            return
        response: Response
        if method == "POST" and path == "/v1/messages/count_tokens":
            raw = await request.body()
            self._record(request, name, _parse(raw), scenario=name)
            response = JSONResponse({"input_tokens": estimate_tokens(len(raw))})
        elif method in ("GET", "HEAD") and path == "/_mock/requests":
            response = JSONResponse([r.to_json() for r in self.log.snapshot()])
        elif method in ("GET", "HEAD"):
            self._record(request, name, None, scenario=name)
            response = JSONResponse(_MODELS if path.startswith("/v1/models") else {"ok": True})
        else:
            self._record(request, name, _parse(await request.body()), scenario=name)
            response = _error(404, "not_found_error", f"no endpoint {method} {path}")
        await response(scope, receive, send)

    def _record(
        self,
        request: Request,
        name: str | None,
        body: Any,
        *,
        scenario: str | None,
        selection: Selection | None = None,
        number: int | None = None,
        fault: Fault | None = None,
    ) -> None:
        turn: int | str | None = None
        if selection is not None:
            turn = "fallback" if selection.turn_index is None else selection.turn_index
        self.log.append(
            RecordedRequest(
                method=request.method,
                path=request.url.path,
                query=request.url.query,
                scenario=scenario,
                conversation=selection.conversation if selection else None,
                turn=turn,
                request_number=number,
                fault=fault.kind if fault else None,
                body=body,
                headers=redact_headers(request.headers),
                time=time.time(),
                credential=credential_digest(request.headers),
            )
        )
        self.on_record()

    async def _messages(self, request: Request, name: str | None, send: Send) -> None:
        scope, receive = request.scope, request.receive
        raw = await request.body()
        body = _parse(raw)
        if not isinstance(body, dict):
            self._record(request, name, body, scenario=name)
            await _error(400, "invalid_request_error", "body is not a JSON object")(
                scope, receive, send
            )
            return
        try:
            selection = select(self.scenarios, body, name)
        except KeyError:
            self._record(request, name, body, scenario=name)
            known = ", ".join(s.name for s in self.scenarios) or "none"
            problem = f"no scenario named {name!r} is loaded (loaded: {known})"
            await _error(404, "not_found_error", problem)(scope, receive, send)
            return
        scenario = selection.scenario
        number, fault = self.plan.next_request(scenario)
        self._record(
            request,
            name,
            body,
            scenario=scenario.name if scenario else None,
            selection=selection,
            number=number,
            fault=fault,
        )
        turn = selection.turn
        content = fallback_blocks() if turn is None else content_blocks(turn.reply, find_cwd(body))
        reply = Reply(
            message_id=new_id("msg"),
            model=str(body.get("model") or "claude-mock"),
            content=content,
            input_tokens=estimate_tokens(len(raw)),
        )
        exchange = _Exchange(scope, receive, send, self.stopping)
        async with exchange.watching():
            await self._respond(exchange, reply, body.get("stream") is True, turn, fault)

    async def _respond(
        self, ex: _Exchange, reply: Reply, stream: bool, turn: Any, fault: Fault | None
    ) -> None:
        request_id = new_id("req")
        delay = (fault.delay if fault else 0.0) + (turn.delay if turn else 0.0)
        if delay and not await ex.pause(delay):
            return
        if fault is not None and fault.hang:
            await ex.pause(None)
            if ex.gone.is_set():
                return
            await ex.start_stream(request_id)
            raise DropConnection("server stopping during a hang")
        if fault is not None and fault.http_status is not None:
            status = fault.http_status
            message = fault.message or f"mock error {status}"
            headers = {"request-id": request_id}
            if fault.retry_after is not None:
                headers["retry-after"] = f"{fault.retry_after:g}"
            await ex.answer(_error(status, error_type(status), message, headers))
            return
        if not stream:
            await ex.answer(_json(reply.message(), request_id))
            return
        await ex.start_stream(request_id)
        await ex.write(sse_frame(reply.message_start()) + PING)
        if fault is not None and fault.disconnect:
            raise DropConnection("scripted mid-stream disconnect")
        if fault is not None and fault.malformed_sse:
            await ex.write(MALFORMED_FRAME, more=False)
            return
        if fault is not None and fault.sse_error is not None:
            error = error_body(fault.sse_error, fault.message or "mock stream error")
            await ex.write(f"event: error\ndata: {json.dumps(error)}\n\n".encode(), more=False)
            return
        chunk_delay = turn.chunk_delay if turn else 0.0
        if chunk_delay:
            for event in reply.block_events(STREAM_CHUNK):
                await ex.write(sse_frame(event))
                if event["type"] == "content_block_delta" and not await ex.pause(chunk_delay):
                    if ex.gone.is_set():
                        return
                    chunk_delay = 0.0  # server stopping: finish quickly
        else:
            await ex.write(b"".join(sse_frame(e) for e in reply.block_events()))
        await ex.write(b"".join(sse_frame(e) for e in reply.closing_events()), more=False)


def _parse(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def _json(payload: Any, request_id: str, status: int = 200) -> Response:
    return JSONResponse(payload, status_code=status, headers={"request-id": request_id})


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(error_body(kind, message), status_code=status, headers=headers)
