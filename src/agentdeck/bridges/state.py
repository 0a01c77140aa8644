"""What a bridge remembers across restarts, in one JSON file of its own (0600).

Per conversation: its agent, the last event it delivered (``cursor``), the reply
being written (its message and text) and what is sealed but not yet sent,
messages queued while the agent works; and the open prompts. The file is
replaced whole (write, then rename), so a crash leaves the old or the new one.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentdeck.errors import ConfigError


@dataclass
class Queued:
    text: str
    actor: str  # the member's tag


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
        return asdict(self)

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
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(state.to_dict(), f, ensure_ascii=False)
        tmp.replace(self.path)
