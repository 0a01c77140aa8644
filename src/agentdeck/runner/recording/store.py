"""The cassettes on disk: ``<home>/recordings/<agent id>.jsonl``, listed, read, removed.

An id names a cassette only if it is a plain agent id (letters, digits, ``-``,
``_``): a path, a dot file or ``../`` never reaches the filesystem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentdeck.errors import AgentdeckError, InvalidState, NotFound, UsageError
from agentdeck.runner.recording.cassette import read_lines
from agentdeck.settings import Settings
from agentdeck.store.store import Store

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
SUFFIX = ".jsonl"


def recordings_dir(settings: Settings) -> Path:
    return settings.home_dir / "recordings"


def checked_id(agent_id: str) -> str:
    """``agent_id`` if it can name a cassette, else ``UsageError``."""
    if not isinstance(agent_id, str) or not _ID.fullmatch(agent_id):
        raise UsageError(
            f"{agent_id!r} cannot name a recording",
            hint="give an agent id as `agentdeck recordings ls` shows it",
        )
    return agent_id


@dataclass(frozen=True)
class RecordingInfo:
    """What ``recordings ls`` shows of one cassette."""

    agent_id: str
    started_at: float | None
    upstream: str
    mode: str
    exchanges: int
    size: int
    capped: bool
    state: str | None  # how the run ended; None: still recording (or cut short)
    problem: str | None = None  # why it cannot be read (cut or edited by hand)

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "started_at": self.started_at,
            "upstream": self.upstream,
            "mode": self.mode,
            "exchanges": self.exchanges,
            "size": self.size,
            "capped": self.capped,
            "state": self.state,
            "problem": self.problem,
        }


class Recordings:
    """The cassettes under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def of(cls, settings: Settings) -> Recordings:
        return cls(recordings_dir(settings))

    def path_of(self, agent_id: str) -> Path:
        return self.root / f"{checked_id(agent_id)}{SUFFIX}"

    def existing(self, agent_id: str) -> Path:
        path = self.path_of(agent_id)
        if not path.is_file() or path.is_symlink():
            raise NotFound("recording", agent_id, hint="`agentdeck recordings ls` lists them")
        return path

    def listed(self) -> list[RecordingInfo]:
        if not self.root.is_dir():
            return []
        infos = []
        for path in sorted(self.root.glob(f"*{SUFFIX}")):
            agent_id = path.name.removesuffix(SUFFIX)
            if _ID.fullmatch(agent_id) and path.is_file() and not path.is_symlink():
                try:
                    infos.append(self.info(agent_id))
                except AgentdeckError as exc:  # one damaged cassette hides no other
                    infos.append(_unreadable(agent_id, path, exc))
        infos.sort(key=lambda i: i.started_at or 0.0)
        return infos

    def info(self, agent_id: str) -> RecordingInfo:
        path = self.existing(agent_id)
        records = read_lines(path)
        meta = next((r for r in records if r.get("kind") == "meta"), {})
        closed = [r for r in records if r.get("kind") == "closed"]
        return RecordingInfo(
            agent_id=agent_id,
            started_at=meta.get("ts"),
            upstream=str(meta.get("upstream", "")),
            mode=str(meta.get("mode", "")),
            exchanges=sum(1 for r in records if r.get("kind") == "request"),
            size=path.stat().st_size,
            capped=any(r.get("kind") == "capped" for r in records),
            state=closed[-1].get("state") if closed else None,
        )

    def records(self, agent_id: str) -> list[dict[str, Any]]:
        return read_lines(self.existing(agent_id))

    def remove(self, agent_id: str) -> None:
        self.existing(agent_id).unlink()


def _unreadable(agent_id: str, path: Path, exc: AgentdeckError) -> RecordingInfo:
    return RecordingInfo(
        agent_id=agent_id,
        started_at=None,
        upstream="",
        mode="",
        exchanges=0,
        size=path.stat().st_size,
        capped=False,
        state=None,
        problem=exc.message,
    )


async def refuse_live(store: Store, agent_id: str, doing: str, *, writing: bool = False) -> None:
    """``InvalidState`` while the recorded agent is in a turn: its cassette is still
    being written, not whole to replay or export. ``writing`` (a removal): while it
    lives at all, idle too, since its next turn appends to the cassette."""
    try:
        agent = await store.get_agent(agent_id)
    except NotFound:
        return
    if agent.state.is_busy or (writing and agent.state.is_live):
        refused = InvalidState(agent_id, str(agent.state), doing)
        refused.hint = (
            "its recording is still being written: wait for it to end, or stop it with "
            f"`agentdeck kill {agent_id}`"
        )
        raise refused
