"""What a bridge remembers across restarts, in one JSON file of its own (0600).

Per conversation: its agent, the last event it delivered (``cursor``), the reply
being written (its message and text) and what is sealed but not yet sent,
messages queued while the agent works; and the open prompts. The file is
replaced whole (write, then rename), so a crash leaves the old or the new one.

A save copies the state on the event loop and leaves scrubbing and writing to a
thread of the file's own: the loop goes on serving the conversations meanwhile.
One thread a file, writing the newest copy it has, so a later state is never
overwritten by an earlier one; loading the file first waits for its writes, and
the thread is not a daemon's, so the process ends with the last state written.

It is written scrubbed like the event log: no secret reaches the disk. A queued
message whose text held one is kept raw in memory only; in the file it is
marked not ``kept``, so a bridge restarted before sending it tells the
conversation to send it again instead of sending the redacted text.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentdeck.core.redact import scrub
from agentdeck.errors import ConfigError
from agentdeck.files import atomic_write

logger = logging.getLogger(__name__)


@dataclass
class Queued:
    text: str
    actor: str  # the member's tag
    kept: bool = True  # False: its text held a secret, lost with the process that had it


@dataclass
class ConversationState:
    agent_id: str | None = None
    cursor: int = 0  # the last of the agent's events that is delivered
    busy: bool = False
    draft_id: str | None = None  # the message being edited as the reply grows
    draft: str = ""  # the reply text not yet sealed
    last_was_tool: bool = False
    sealed: list[str] = field(default_factory=list)  # chunks to deliver, in order
    queue: list[Queued] = field(default_factory=list)
    project: str | None = None  # /project: where new agents here work
    template: str | None = None  # /new TEMPLATE: the agent template to start with

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConversationState:
        queue = [Queued(**q) for q in data.get("queue", [])]
        return cls(**{**data, "queue": queue})


@dataclass
class OpenPrompt:
    conversation: str  # a Conversation key
    message_id: str
    kind: str
    text: str


@dataclass
class BridgeState:
    position: int | None = None  # the prompt stream's last event (None: start live)
    conversations: dict[str, ConversationState] = field(default_factory=dict)
    prompts: dict[str, OpenPrompt] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """As it may be written: every text scrubbed, a queued message whose text
        that changed marked not kept."""
        return _scrubbed(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BridgeState:
        return cls(
            position=data.get("position"),
            conversations={
                k: ConversationState.from_dict(v) for k, v in data.get("conversations", {}).items()
            },
            prompts={k: OpenPrompt(**v) for k, v in data.get("prompts", {}).items()},
        )


def _scrubbed(data: dict[str, Any]) -> dict[str, Any]:
    """``asdict(state)`` made fit to write (in place: it is a copy)."""
    for conv in data["conversations"].values():
        conv["draft"] = scrub(conv["draft"])
        conv["sealed"] = [scrub(chunk) for chunk in conv["sealed"]]
        for queued in conv["queue"]:
            text = scrub(queued["text"])
            if text != queued["text"]:
                queued.update(text=text, kept=False)
    for prompt in data["prompts"].values():
        prompt["text"] = scrub(prompt["text"])
    return data


class StateFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._writer = _writer_of(path)

    def load(self) -> BridgeState:
        self._writer.flush()  # what this process saved last, not what the disk had before
        try:
            raw = self.path.read_text()
        except FileNotFoundError:
            return BridgeState()
        try:
            return BridgeState.from_dict(json.loads(raw))
        except (ValueError, TypeError, KeyError) as exc:
            raise ConfigError(
                f"the bridge's state file {self.path} is damaged: {exc}",
                hint="move it away to start afresh (conversations lose their agents)",
            ) from exc

    def save(self, state: BridgeState) -> None:
        """Write ``state`` now (blocks: not on the loop)."""
        self.save_soon(state)
        self.flush()

    def save_soon(self, state: BridgeState) -> None:
        """Hand a copy of ``state`` to the file's writer: returns at once."""
        self._writer.submit(asdict(state))

    def flush(self) -> None:
        """Wait until the last state saved is on disk (blocks: not on the loop)."""
        self._writer.flush()


class _Writer:
    """Writes the newest copy it was given, in a thread that lives while there is
    one to write. A copy given while another is written replaces any still
    waiting: only the newest is worth writing, and it is written last."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._changed = threading.Condition()
        self._waiting: dict[str, Any] | None = None
        self._thread: threading.Thread | None = None

    def submit(self, data: dict[str, Any]) -> None:
        with self._changed:
            self._waiting = data
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"bridge-state-{self.path.name}"
                )
                self._thread.start()

    def flush(self) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self._thread is None)

    def _run(self) -> None:
        while True:
            with self._changed:
                data, self._waiting = self._waiting, None
                if data is None:
                    self._thread = None
                    self._changed.notify_all()
                    return
            try:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                text = json.dumps(_scrubbed(data), ensure_ascii=False)
                atomic_write(self.path, text, mode=0o600)
            except Exception:  # the thread's top: the next save tries again
                logger.exception("the bridge's state could not be written to %s", self.path)


_writers: dict[str, _Writer] = {}
_writers_lock = threading.Lock()


def _writer_of(path: Path) -> _Writer:
    """One writer a file for the whole process: two bridges' saves to one path
    are still written in the order they were made."""
    with _writers_lock:
        key = str(path.absolute())
        if key not in _writers:
            _writers[key] = _Writer(path)
        return _writers[key]
