"""The assistant's text as it is being written: never stored, only shown live.

Claude Code sends the text of an answer in small deltas before the message that
holds it whole. The deck never writes those to the log (one event per token
would swamp it): the runner hands them to a ``PartialSink`` (the daemon's event
hub), which coalesces them and passes ``PartialText`` records to the followers
that asked for them. The final text is one ``assistant_text`` event as ever; a
follower that joins late, or reconnects, sees only that.

A record is an edit of the block's text as the follower shows it: keep the first
``offset`` characters, then append ``text``. The text shown is the block's text
scrubbed as a whole (``PartialBlock``), up to its last whitespace: a word still
being written is held back until it ends, so a secret is never shown half
written, and one that only a later word reveals (``PASSWORD = …``) is
redacted where it was shown (the edit starts before it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Protocol

from agentdeck.core.redact import scrub

# Past this many characters a block is no longer streamed (each flush scrubs the
# block whole): its final event shows it.
PARTIAL_BLOCK_LIMIT = 64 * 1024


@dataclass(frozen=True, slots=True)
class PartialText:
    """One edit of a text block being written (see the module's docstring)."""

    type: ClassVar[str] = "partial"
    agent_id: str
    block: str  # the block's key: its message id and index
    offset: int  # keep this many characters of what was shown for the block
    text: str  # then append this
    parent_tool_use_id: str | None = None  # a subagent's text, as its events say

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PartialText:
        parent = data.get("parent_tool_use_id")
        return cls(
            agent_id=str(data["agent_id"]),
            block=str(data["block"]),
            offset=int(data["offset"]),
            text=str(data["text"]),
            parent_tool_use_id=None if parent is None else str(parent),
        )

    def applied(self, shown: str) -> str:
        """What a follower shows for the block after this edit."""
        return shown[: self.offset] + self.text


class PartialSink(Protocol):
    """Where a session hands the deltas of the text being written."""

    def write(self, agent_id: str, block: str, delta: str, parent_tool_use_id: str | None) -> None:
        """More text of ``block``, as Claude Code sent it (raw)."""
        ...

    def end(self, agent_id: str) -> None:
        """A whole message came: what was held for the agent is dropped (its event
        shows it)."""
        ...


class PartialBlock:
    """One block's raw text and what was shown of it: each ``take`` gives the edit
    that brings a follower from the last shown text to the scrubbed text now."""

    def __init__(self, agent_id: str, block: str, parent_tool_use_id: str | None) -> None:
        self.agent_id = agent_id
        self.block = block
        self.parent_tool_use_id = parent_tool_use_id
        self._raw: list[str] = []
        self._size = 0
        self._shown = ""

    def add(self, delta: str) -> None:
        if self._size <= PARTIAL_BLOCK_LIMIT:
            self._raw.append(delta)
            self._size += len(delta)

    def take(self) -> PartialText | None:
        """The edit since the last one, None when nothing new is ready to show."""
        if self._size > PARTIAL_BLOCK_LIMIT:
            return None
        raw = "".join(self._raw)
        self._raw = [raw]
        cut = max(raw.rfind(" "), raw.rfind("\n"), raw.rfind("\t"))
        if cut < 0:
            return None
        now = scrub(raw[: cut + 1])
        if now == self._shown:
            return None
        offset = _common_prefix(now, self._shown)
        self._shown = now
        return PartialText(
            agent_id=self.agent_id,
            block=self.block,
            offset=offset,
            text=now[offset:],
            parent_tool_use_id=self.parent_tool_use_id,
        )


def _common_prefix(a: str, b: str) -> int:
    if a.startswith(b):
        return len(b)  # the usual case: the text grew
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
