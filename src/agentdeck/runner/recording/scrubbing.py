"""A response's chunks as a cassette may keep them: scrubbed as one text, cut where
they came. Pure.

A secret the model streams back rarely comes in one piece: its first half may end
one chunk and its second start the next, or (the usual case) be split between two
``content_block_delta`` events, each a JSON string of its own with the SSE framing
between them. Scrubbing each piece alone keeps both halves. So the response is
scrubbed whole, twice:

1. what the model said: the deltas' strings (``text``, ``partial_json``,
   ``thinking``), in the order they came, joined (across content blocks too: a
   model that splits a secret between two blocks is caught) and scrubbed; a delta
   whose string changed gets its new string (the redaction marker goes to the delta
   where the secret began, the deltas after it lose their part of it);
2. then the stream's text as a whole (a secret across a chunk boundary, in a
   header-like line, in a JSON answer that is not streamed).

Each change is an edit of the text; the chunk boundaries move through the edits
(a boundary inside a redacted span goes after its marker), so every chunk keeps
its time and what the chunks join to is the scrubbed stream. A stream with
nothing to scrub keeps its chunks byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from agentdeck.core.redact import scrub, scrub_value
from agentdeck.core.redact_rules import is_secret_name

Edit = tuple[int, int, str]  # [start, end) of the text replaced by a string
_DELTA_FIELDS = ("text", "partial_json", "thinking")
_DATA = re.compile(r"^data: ?", re.M)
_LITERAL = r'"(?:[^"\\]|\\.)*+"'


def scrubbed_chunks(chunks: list[bytes]) -> list[bytes] | None:
    """``chunks`` scrubbed as one stream, as many as came (some maybe empty; the same
    list when there was nothing to scrub); None when the stream is not UTF-8 (each
    chunk is then scrubbed on its own by the caller)."""
    whole = b"".join(chunks)
    try:
        text = whole.decode("utf-8")
    except UnicodeDecodeError:
        return None
    ends = _cumulative(len(c) for c in chunks)
    first = _delta_edits(text)
    if first:
        ends = _moved(ends, _in_bytes(text, first))
        text = _applied(text, first)
    clean = scrub(text)
    second = _line_edits(text, clean) if clean != text else []
    if second:
        ends = _moved(ends, _in_bytes(text, second))
        text = clean
    if not first and not second:
        return chunks
    data = text.encode("utf-8")
    starts = [0, *ends[:-1]]
    return [data[a:b] for a, b in zip(starts, ends, strict=True)]


class RequestScrubber:
    """A request body's JSON scrubbed through its structure (``scrub_value``), parts
    seen lately taken from a cache: Claude Code sends its system prompt, its tools
    and the conversation so far again with every request, and every agent sends the
    same tools (~50 KB, 2-7 ms to scrub on the proxy's loop). Scrubbing is a pure
    function of a part's text, and a part is the same when it serializes the same
    (``1`` is not ``true`` there); a part under a secret's name is keyed with it.
    The cache keeps a part's hash, never its text, and is bounded (``max_chars`` of
    parts' JSON), least recently used out."""

    def __init__(self, max_chars: int = 8 * 1024 * 1024) -> None:
        self.max_chars = max_chars
        # By the part's name (None: a list's element) and its JSON's hash and size:
        # no text that was not scrubbed is kept.
        self._cache: OrderedDict[tuple[str | None, bytes, int], object] = OrderedDict()
        self._chars = 0

    def scrubbed(self, value: object) -> object:
        if not isinstance(value, dict):
            return scrub_value(value)
        out: dict[str, object] = {}
        for key, item in value.items():  # JSON's keys are strings
            if isinstance(item, list) and not is_secret_name(key):
                out[key] = [self._part(None, el) for el in item]
            else:
                out[key] = self._part(key, item)
        return out

    def _part(self, key: str | None, item: object) -> object:
        """``item`` scrubbed as a list's element (``key`` None) or as ``key``'s value."""
        if not isinstance(item, dict | list | str) or (isinstance(item, str) and len(item) < 64):
            return scrub_value(item) if key is None else scrub_value({key: item})[key]
        shown = json.dumps(item, ensure_ascii=False).encode("utf-8", "surrogatepass")
        found = (key, hashlib.blake2b(shown).digest(), len(shown))
        cached = self._cache.get(found, _MISSING)
        if cached is not _MISSING:
            self._cache.move_to_end(found)
            return cached
        clean = scrub_value(item) if key is None else scrub_value({key: item})[key]
        if len(shown) <= self.max_chars // 4:
            self._cache[found] = clean
            self._chars += len(shown)
            while self._chars > self.max_chars:
                (_, _, size), _ = self._cache.popitem(last=False)
                self._chars -= size
        return clean


_MISSING = object()
SCRUBBER = RequestScrubber()  # the process's: its agents send the same tools


# -- the deltas: what the model said, per content block ------------------------------


@dataclass
class _Delta:
    start: int  # where the data line's JSON begins in the stream's text
    end: int  # where the line ends
    event: dict[str, object]
    field: str
    value: str


def _delta_edits(text: str) -> list[Edit]:
    if "content_block_delta" not in text:
        return []
    deltas: list[_Delta] = []
    for m in _DATA.finditer(text):
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        delta = _delta_at(text, m.end(), end)
        if delta is not None:
            deltas.append(delta)
    values = [d.value for d in deltas]
    joined = "".join(values)
    clean = scrub(joined)
    if clean == joined:
        return []
    ends = _moved(_cumulative(len(v) for v in values), _line_edits(joined, clean))
    starts = [0, *ends[:-1]]
    edits: list[Edit] = []
    for delta, a, b in zip(deltas, starts, ends, strict=True):
        if clean[a:b] != delta.value:
            edits.append((delta.start, delta.end, _rewritten(text, delta, clean[a:b])))
    return sorted(edits)


def _delta_at(text: str, start: int, end: int) -> _Delta | None:
    line = text[start:end]
    if "content_block_delta" not in line:
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or event.get("type") != "content_block_delta":
        return None
    delta = event.get("delta")
    if not isinstance(delta, dict):
        return None
    for name in _DELTA_FIELDS:
        value = delta.get(name)
        if isinstance(value, str):
            return _Delta(start, end, event, name, value)
    return None


def _rewritten(text: str, delta: _Delta, value: str) -> str:
    """The event's JSON with ``value`` for its delta's string: only that string
    literal replaced when it can be found once, else the event written anew."""
    line = text[delta.start : delta.end]
    pattern = rf'"{delta.field}"\s*+:\s*+({_LITERAL})'
    found = [m for m in re.finditer(pattern, line) if _decoded(m.group(1)) == delta.value]
    literal = json.dumps(value, ensure_ascii=False)
    if len(found) == 1:
        a, b = found[0].span(1)
        return line[:a] + literal + line[b:]
    event = dict(delta.event)
    event["delta"] = {**dict(delta.event["delta"]), delta.field: value}  # type: ignore[call-overload]
    return json.dumps(event, ensure_ascii=False)


def _decoded(literal: str) -> object:
    try:
        return json.loads(literal)
    except ValueError:
        return None


# -- edits and boundaries ------------------------------------------------------------


def _line_edits(old: str, new: str) -> list[Edit]:
    """The edits that make ``old`` into ``new`` (a scrubbed ``old``): line by line
    when both have as many lines (the scrubbing rules keep lines), each the part
    between the line's common prefix and suffix; else one edit over the whole."""
    a, b = old.split("\n"), new.split("\n")
    if len(a) != len(b):
        return [_narrowed(0, old, new)]
    edits: list[Edit] = []
    at = 0
    for x, y in zip(a, b, strict=True):
        if x != y:
            edits.append(_narrowed(at, x, y))
        at += len(x) + 1
    return edits


def _narrowed(at: int, old: str, new: str) -> Edit:
    most = min(len(old), len(new))
    p = 0
    while p < most and old[p] == new[p]:
        p += 1
    s = 0
    while s < most - p and old[len(old) - 1 - s] == new[len(new) - 1 - s]:
        s += 1
    return (at + p, at + len(old) - s, new[p : len(new) - s])


def _in_bytes(text: str, edits: list[Edit]) -> list[tuple[int, int, int]]:
    """Edits as (start, end, length of the replacement) in UTF-8 bytes."""
    out = []
    at = size = 0  # one sweep: the bytes up to ``at`` are ``size``
    for start, end, new in edits:
        a = size + len(text[at:start].encode("utf-8", "surrogatepass"))
        b = a + len(text[start:end].encode("utf-8", "surrogatepass"))
        out.append((a, b, len(new.encode("utf-8", "surrogatepass"))))
        at, size = end, b
    return out


def _moved(ends: list[int], edits: Iterable[tuple[int, int, int] | Edit]) -> list[int]:
    """Chunk ends (offsets) after ``edits`` (sorted, apart): a boundary inside an
    edited span goes after its replacement (the marker stays where the secret began)."""
    spans = [(a, b, n if isinstance(n, int) else len(n)) for a, b, n in edits]
    out = []
    shift = i = 0  # one sweep: the ends ascend, as the edits do
    for end in ends:
        while i < len(spans) and spans[i][1] <= end:  # an edit wholly before the end
            a, b, n = spans[i]
            shift += n - (b - a)
            i += 1
        if i < len(spans) and spans[i][0] < end:  # the end inside an edit: after it
            out.append(spans[i][0] + shift + spans[i][2])
        else:
            out.append(end + shift)
    return out


def _applied(text: str, edits: list[Edit]) -> str:
    parts, at = [], 0
    for start, end, new in edits:
        parts += [text[at:start], new]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def _cumulative(sizes: Iterable[int]) -> list[int]:
    out, total = [], 0
    for size in sizes:
        total += size
        out.append(total)
    return out
