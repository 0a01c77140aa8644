"""The one reader of server-sent events (the daemon's ``/api/events/stream``).

Bytes go in as they arrive, split anywhere (inside a line, between a CR and its LF);
events come out as their blank line completes them. It follows the HTML standard's
event-stream rules: ``event:``, ``data:`` (lines joined by newlines), ``id:``,
``retry:``, comments (``: ping``) skipped, unknown fields ignored, one space after
the colon dropped. An event the stream ends inside is not given (the daemon sends
it again to a client that resumes from ``last_id``).

A line that is not UTF-8, or longer than any the daemon writes, is a broken stream:
``BrokenStream`` says where, after every event before it was given, so a client
that resumes from ``last_id`` loses nothing.

No imports beyond our error tree: the CLI's quick path follows agents with it.
"""

from __future__ import annotations

from agentdeck.errors import BrokenStream

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from collections.abc import Iterator

MAX_LINE = 16 * 1024 * 1024  # an event's JSON on one line: far above any the daemon sends


class ServerEvent:
    """One event: its type (``kind``, "message" when none was named), its data (the
    ``data:`` lines joined by newlines) and its id (the last ``id:`` seen, if any)."""

    __slots__ = ("data", "id", "kind")

    def __init__(self, kind: str, data: str, id: str | None = None) -> None:
        self.kind = kind
        self.data = data
        self.id = id

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerEvent):
            return NotImplemented
        return (self.kind, self.data, self.id) == (other.kind, other.data, other.id)

    def __hash__(self) -> int:
        return hash((self.kind, self.data, self.id))

    def __repr__(self) -> str:
        return f"ServerEvent({self.kind!r}, {self.data!r}, id={self.id!r})"


class EventStreamReader:
    """Reads one event stream. ``feed`` each chunk as it arrives and iterate over
    the events it completes; ``last_id`` is where to resume (``Last-Event-ID``),
    ``retry`` the reconnection delay the server asked for (milliseconds)."""

    def __init__(self, *, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self.last_id: str | None = None
        self.retry: int | None = None
        self._pending = b""
        self._after_cr = False  # the last chunk ended in CR: an LF first is its pair
        self._kind = ""
        self._data: list[str] = []
        self._lines = 0

    def feed(self, chunk: bytes) -> Iterator[ServerEvent]:
        """The events ``chunk`` completes, in order. Raises ``BrokenStream`` at a
        broken line, once every event before it has been given."""
        if not chunk:
            return
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._after_cr = False
        pending = self._pending + chunk
        start = 0
        while True:
            end = _line_end(pending, start)
            if end < 0:
                break
            line = pending[start:end]
            if pending[end] == 13:  # CR: its LF may be next, or in the next chunk
                if end + 1 < len(pending):
                    start = end + 2 if pending[end + 1] == 10 else end + 1
                else:
                    start, self._after_cr = end + 1, True
            else:
                start = end + 1
            self._pending = pending[start:]
            event = self._line(line)
            if event is not None:
                yield event
        self._pending = pending[start:]
        if len(self._pending) > self.max_line:
            self._broken(f"a line longer than {self.max_line} bytes")

    def _line(self, raw: bytes) -> ServerEvent | None:
        self._lines += 1
        if len(raw) > self.max_line:
            self._broken(f"a line longer than {self.max_line} bytes")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._broken(f"a line that is not UTF-8 ({raw[:60]!r})")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment: the daemon's keep-alive ping
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._kind = value
        elif field == "id" and "\0" not in value:
            self.last_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            self.retry = int(value)
        return None  # any other field is ignored, as the standard says

    def _dispatch(self) -> ServerEvent | None:
        data, kind = self._data, self._kind or "message"
        self._data, self._kind = [], ""
        if not data:
            return None
        return ServerEvent(kind, "\n".join(data), self.last_id)

    def _broken(self, what: str) -> None:
        self._pending, self._data, self._kind = b"", [], ""
        after = f"after event {self.last_id}" if self.last_id is not None else "before any event"
        raise BrokenStream(
            f"the daemon's event stream broke at line {self._lines} ({after}): {what}",
            hint="the stream is read again from the last event given",
        )


def _line_end(data: bytes, start: int) -> int:
    """Where the first line ending (CR or LF) at or after ``start`` is, or -1."""
    lf, cr = data.find(b"\n", start), data.find(b"\r", start)
    if lf < 0 or (0 <= cr < lf):
        return cr
    return lf
