"""What a bridge remembers across restarts, in one JSON file of its own (0600).

Per conversation: its agent, the last event it delivered (``cursor``), the reply
being written (its message and text) and what is sealed but not yet sent,
messages queued while the agent works; and the open prompts. The file is
replaced whole (write, then rename), so a crash leaves the old or the new one.

It is written scrubbed like the event log: no secret reaches the disk. A queued
message whose text held one is kept raw in memory only; in the file it is
marked not ``kept``, so a bridge restarted before sending it tells the
conversation to send it again instead of sending the redacted text.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentdeck.core.redact import scrub
from agentdeck.errors import ConfigError
from agentdeck.files import atomic_write


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
        data = asdict(self)
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

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BridgeState:
        return cls(
            position=data.get("position"),
            conversations={
                k: ConversationState.from_dict(v) for k, v in data.get("conversations", {}).items()
            },
            prompts={k: OpenPrompt(**v) for k, v in data.get("prompts", {}).items()},
        )


class StateFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> BridgeState:
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
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write(self.path, json.dumps(state.to_dict(), ensure_ascii=False), mode=0o600)
