"""A cassette: one agent's model traffic as JSON lines, scrubbed, within a size cap.

One file per agent (``<home>/recordings/<agent id>.jsonl``), appended to when the
agent is resumed. An exchange is written whole once it has ended (its request,
its response, its chunks, its end: the scrubbing is then off the path of the
request to the model); lines:

* ``meta``: the agent, when it began, the upstream (no userinfo, no query), the
  mode (``all`` or ``errors``), the cap;
* ``start``: the workspace's start state (its directory, git HEAD, checkpoint),
  kept while Claude Code boots and before its first request is forwarded;
* ``request``: the exchange's number, its method, path, kept headers and body;
* ``chunk``: a piece of the response body as it came, ``t`` seconds after the
  request was forwarded (text, or ``b64`` when it is not UTF-8);
* ``response``: its status and kept headers (written when they came);
* ``end``: how the exchange ended (``complete``, ``timeout``, ``upstream_error``,
  ``client_gone``) and how long it took;
* ``capped``: the cap was reached; from here on no body or chunk is kept;
* ``closed``: the agent's run ended, with its state.

What is kept is scrubbed with the event log's rules (``core.redact``): a request
body through its JSON structure, a response as a whole once it ended, cut back
into its chunks at their times (``scrubbing``: a secret split across chunks, or
across ``content_block_delta`` events, is redacted where it began and its rest
dropped from the chunks after). Credential headers are never kept
(``kept_headers``).
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

from agentdeck.core.redact import scrub, scrub_value
from agentdeck.errors import AgentdeckError
from agentdeck.runner.recording.scrubbing import SCRUBBER, RequestScrubber, scrubbed_chunks

FORMAT = 1

# Headers a cassette may keep: those that say what was asked and answered, nothing
# that authenticates. Anything else is dropped (deny when unsure).
_KEPT = frozenset((
    "content-type", "content-length", "anthropic-version", "anthropic-beta", "user-agent",
    "request-id", "retry-after", "x-should-retry", "accept",
))  # fmt: skip
_KEPT_PREFIXES = ("anthropic-ratelimit-", "x-stainless-")
# A header whose name says it carries a credential is never kept, even if allowed above.
_CREDENTIAL = re.compile(r"auth|token|key|secret|cookie|session|password|signature", re.I)


def kept_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The headers a cassette keeps (lower-cased names, scrubbed values)."""
    kept: dict[str, str] = {}
    for name, value in headers:
        low = name.lower()
        if _CREDENTIAL.search(low):
            continue
        if low in _KEPT or low.startswith(_KEPT_PREFIXES):
            kept[low] = scrub(value)
    return kept


def shown_upstream(url: str) -> str:
    """The upstream as a cassette names it: scheme, host, port and path only."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def scrubbed_body(body: bytes, scrubber: RequestScrubber | None = None) -> Any:
    """A request body as kept: JSON scrubbed through its structure, else text."""
    try:
        value = json.loads(body)
        return {"json": scrubber.scrubbed(value) if scrubber else scrub_value(value)}
    except (ValueError, RecursionError):
        return _piece(body)


def _piece(data: bytes) -> dict[str, str]:
    try:
        return {"text": scrub(data.decode("utf-8"))}
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii")}


@dataclass
class _Exchange:
    """One exchange, held until it ends: written (and scrubbed) then, off the path of
    the request to the model (scrubbing a request of 100 KB takes milliseconds), and
    its response scrubbed as a whole too."""

    number: int
    record: dict[str, Any]
    body: bytes
    headers: list[tuple[str, str]]  # as they came: never written as such
    response: dict[str, Any] | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    size: int = 0
    dropped: bool = False  # its body went past the cap


class CassetteWriter:
    """Appends one agent's exchanges to its cassette; never raises into the proxy
    for a full disk: recording stops, the agent goes on (``broken``)."""

    def __init__(self, path: Path, *, cap_bytes: int) -> None:
        self.path = path
        self.cap_bytes = cap_bytes
        self.written = path.stat().st_size if path.exists() else 0
        self.capped = False
        self.broken: str | None = None
        self.exchanges = self._count_exchanges()
        self._file: IO[str] | None = None
        self._open: dict[int, _Exchange] = {}

    def _count_exchanges(self) -> int:
        if not self.path.exists():
            return 0
        with self.path.open("rb") as f:
            return sum(1 for line in f if line.startswith(b'{"kind": "request"'))

    # -- writing ---------------------------------------------------------------

    def _cap(self) -> None:
        if not self.capped:
            self.capped = True
            self._write({"kind": "capped", "at_bytes": self.written, "cap": self.cap_bytes})

    def _write(
        self, record: Mapping[str, Any], *, body: bool = False, line: str | None = None
    ) -> None:
        if self.broken is not None:
            return
        if line is None:
            line = json.dumps(record, ensure_ascii=False) + "\n"
        size = len(line.encode("utf-8"))
        if body and (self.capped or self.written + size > self.cap_bytes):
            self._cap()
            return
        try:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                self._file = self.path.open("a", encoding="utf-8")
                self.path.chmod(0o600)
                if self._torn():  # a crash's torn line stays on a line of its own
                    line, size = "\n" + line, size + 1
            self._file.write(line)
        except OSError as exc:
            self.broken = f"{type(exc).__name__}: {exc}"
            return
        self.written += size

    def _torn(self) -> bool:
        """Whether the cassette being appended to ends without a newline."""
        if self.written == 0:
            return False
        with self.path.open("rb") as f:
            f.seek(-1, 2)
            return f.read(1) != b"\n"

    def flush(self) -> None:
        if self._file is not None and self.broken is None:
            try:
                self._file.flush()
            except OSError as exc:
                self.broken = f"{type(exc).__name__}: {exc}"

    def meta(self, agent_id: str, upstream: str, mode: str) -> None:
        self._write(
            {
                "kind": "meta",
                "format": FORMAT,
                "agent_id": agent_id,
                "ts": time.time(),
                "upstream": shown_upstream(upstream),
                "mode": mode,
                "cap": self.cap_bytes,
            }
        )
        self.flush()

    def note(self, record: Mapping[str, Any]) -> None:
        """A line of its own (the start's checkpoint, taken while the agent boots)."""
        self._write(record)
        self.flush()

    def request(
        self, method: str, path: str, headers: Iterable[tuple[str, str]], body: bytes
    ) -> int:
        """A request, held until its exchange ends; its exchange number."""
        self.exchanges += 1
        n = self.exchanges
        record: dict[str, Any] = {
            "kind": "request",
            "n": n,
            "ts": time.time(),
            "method": method,
            "path": path,
        }
        # Its headers sorted (kept or not) when it is written: off the way to the model.
        self._open[n] = _Exchange(n, record, body, list(headers), size=len(body))
        return n

    def response(self, n: int, status: int, headers: Iterable[tuple[str, str]]) -> None:
        held = self._open.get(n)
        if held is not None:
            held.response = {"kind": "response", "n": n, "status": status}
            held.response_headers = list(headers)

    def chunk(self, n: int, t: float, data: bytes) -> None:
        """A piece of response ``n``'s body, held until the exchange ends; past the
        cap, nothing more (the chunk is still forwarded by the proxy)."""
        held = self._open.get(n)
        if held is None or self.capped:
            return
        held.size += len(data)
        if self.written + held.size > self.cap_bytes:
            held.chunks.clear()
            held.dropped = True
            return
        held.chunks.append((t, data))

    def end(self, n: int, outcome: str, seconds: float, detail: str | None = None) -> None:
        """The exchange written whole: its request, response, chunks and how it ended."""
        held = self._open.pop(n, None)
        if held is not None:
            self._write_held(held)
        ended: dict[str, Any] = {"kind": "end", "n": n, "outcome": outcome, "seconds": seconds}
        if detail:
            ended["detail"] = scrub(detail)
        self._write(ended)
        self.flush()

    def _write_held(self, held: _Exchange) -> None:
        record: dict[str, Any] = {**held.record, "headers": kept_headers(held.headers)}
        line = None
        if held.body and not self.capped:
            whole = {**record, "body": scrubbed_body(held.body, SCRUBBER)}
            text = json.dumps(whole, ensure_ascii=False) + "\n"  # encoded once (~50 KB)
            if self.written + len(text.encode("utf-8")) <= self.cap_bytes:
                record, line = whole, text
            else:
                self._cap()
        self._write(record, line=line)
        if held.response is not None:
            self._write({**held.response, "headers": kept_headers(held.response_headers)})
        if held.dropped:
            self._cap()
        for chunk in _scrubbed_chunks(held.number, held.chunks) if held.chunks else ():
            self._write(chunk, body=True)

    def close(self, state: str | None) -> None:
        for n in list(self._open):
            self.end(n, "client_gone", 0.0, "the run ended during this exchange")
        self._write({"kind": "closed", "ts": time.time(), "state": state})
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                self.broken = f"{type(exc).__name__}: {exc}"
            self._file = None


def _scrubbed_chunks(n: int, chunks: list[tuple[float, bytes]]) -> list[dict[str, Any]]:
    """The chunks as kept, each at its time: scrubbed as one stream (``scrubbing``),
    so a secret split across chunks or across delta events is not kept in halves."""
    clean = scrubbed_chunks([data for _, data in chunks])
    if clean is None:  # not UTF-8: each piece scrubbed on its own
        pieces = [_piece(data) for _, data in chunks]
    else:
        pieces = [_kept(data) for data in clean]
    return [
        {"kind": "chunk", "n": n, "t": t, **p} for (t, _), p in zip(chunks, pieces, strict=True)
    ]


def _kept(data: bytes) -> dict[str, str]:
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii")}


# -- reading -------------------------------------------------------------------


def read_lines(path: Path) -> list[dict[str, Any]]:
    """Every record of a cassette; ``AgentdeckError`` naming the line when the file
    is not one (not UTF-8, a line that is not a record, a record of the wrong
    shape): a cassette cut or edited by hand is said so, never half read. A torn
    line, from a crash while it was written, is skipped where a crash leaves one:
    last, or just before a resumed run's ``meta``."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = data[: exc.start].count(b"\n") + 1
        raise damaged(path, where, "is not UTF-8 text") from None
    lines = text.splitlines()
    records: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            following = lines[i + 1] if i + 1 < len(lines) else None
            if following is None or following.startswith('{"kind": "meta"'):
                continue  # torn by a crash (a resumed run's records come after it)
            raise damaged(path, i + 1, "is not a JSON record") from None
        problem = _shape_problem(record)
        if problem is not None:
            raise damaged(path, i + 1, problem)
        records.append(record)
    return records


def damaged(path: Path, line: int, why: str) -> AgentdeckError:
    agent_id = path.name.removesuffix(".jsonl")
    return AgentdeckError(
        f"the recording of {agent_id} is damaged: line {line} of {path} {why}",
        hint="it was cut or edited by hand; record the run again, or remove it with "
        f"`agentdeck recordings rm {agent_id}`",
    )


_NUMBERED = frozenset(("request", "response", "chunk", "end"))
_KINDS = _NUMBERED | {"meta", "start", "capped", "closed"}


def _shape_problem(record: Any) -> str | None:
    """What is wrong with a cassette line's record, or None: the fields the
    readers use, of the types the writer writes."""
    if not isinstance(record, dict):
        return "is not a JSON object"
    kind = record.get("kind")
    if kind not in _KINDS:
        return f"has no known kind ({str(kind)[:40]!r})"
    n = record.get("n")
    if kind in _NUMBERED and (type(n) is not int or n < 1):
        return f"({kind}) has no exchange number n"
    expected: dict[str, tuple[type, ...]] = _FIELDS.get(kind, {})
    for key, types in expected.items():
        if key in record and record[key] is not None and not isinstance(record[key], types):
            return f"({kind}) has a {key} that is no {types[0].__name__}"
    if kind == "response" and type(record.get("status")) is not int:
        return "(response) has no status"
    if kind == "chunk":
        if isinstance(record.get("text"), str):
            return None
        try:
            if not isinstance(record.get("b64"), str):
                raise ValueError
            base64.b64decode(record["b64"], validate=True)
        except ValueError:
            return "(chunk) has neither text nor base64 bytes"
    return None


_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "meta": {"ts": (int, float), "upstream": (str,), "mode": (str,), "agent_id": (str,)},
    "start": {"cwd": (str,), "git_head": (str,), "checkpoint": (dict,)},
    "request": {"method": (str,), "path": (str,), "body": (dict,), "headers": (dict,)},
    "response": {"headers": (dict,)},
    "chunk": {"t": (int, float)},
    "end": {"outcome": (str,), "seconds": (int, float)},
    "closed": {"state": (str,)},
}


def offers_tools(body: Any) -> bool:
    """Whether a request offers the model tools (the agent's own; a side request,
    such as a session title's, does not)."""
    return isinstance(body, dict) and bool(body.get("tools"))


def response_bytes(records: Iterable[Mapping[str, Any]], n: int) -> bytes:
    """The body of response ``n`` as the cassette keeps it."""
    out = bytearray()
    for record in records:
        if record.get("kind") == "chunk" and record.get("n") == n:
            if "text" in record:
                out += str(record["text"]).encode("utf-8")
            elif "b64" in record:
                out += base64.b64decode(str(record["b64"]))
    return bytes(out)
