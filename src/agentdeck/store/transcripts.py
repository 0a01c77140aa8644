"""Claude Code transcripts in the database (the ``transcripts`` table of migration
0012): a copy of an agent's session file, saved by the runner host that runs it at
each turn's end, so that another host can resume the agent once its host is lost
without the dead host's disk.

One row per agent (the newest copy wins). The text is scrubbed with the event
log's rules (``core.redact.scrub``: secrets redacted, ``<private>`` parts dropped)
before it is written, in a worker thread (a transcript can be megabytes), and NUL
characters are dropped (PostgreSQL's text holds none; both backends store the same
text). A transcript over ``transcript_max_bytes`` (``AGENTDECK_TRANSCRIPT_MAX_BYTES``)
is refused whole: nothing is written, the older copy stays.
"""

from __future__ import annotations

import time

import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.hosts import check_name
from agentdeck.core.redact import scrub
from agentdeck.errors import Refused, UsageError
from agentdeck.store.schema import transcripts
from agentdeck.store.store import Store

DEFAULT_MAX_BYTES = 32 * 1024 * 1024  # settings.transcript_max_bytes' default
_MAX_ID = 200


def _check_id(what: str, value: str) -> str:
    if (
        not isinstance(value, str)
        or not value
        or len(value) > _MAX_ID
        or not value.isprintable()
        or value != value.strip()
    ):
        raise UsageError(f"bad {what} {value!r}: 1-{_MAX_ID} printable characters")
    return value


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


class TranscriptStore:
    def __init__(self, store: Store, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 1:
            raise UsageError(f"a transcript limit of {max_bytes} bytes keeps nothing")
        self.store = store
        self.max_bytes = max_bytes

    async def save(self, agent_id: str, session_id: str, host: str, text: str) -> int:
        """Keep ``text`` (the session file of ``session_id``, saved by runner host
        ``host``) as ``agent_id``'s transcript, replacing any older copy; returns
        the size stored, in bytes (scrubbed, NULs dropped). ``Refused`` past the
        limit, ``UsageError`` for a bad id, host or text: nothing written then."""
        _check_id("agent id", agent_id)
        _check_id("session id", session_id)
        check_name(host)
        if not isinstance(text, str):
            raise UsageError(f"a transcript is text, not {type(text).__name__}")
        self._check_size(agent_id, len(text.encode("utf-8", "surrogatepass")))
        kept = await anyio.to_thread.run_sync(_cleaned, text)
        data = kept.encode("utf-8", "replace")
        size = len(data)
        self._check_size(agent_id, size)
        row = {
            "agent_id": agent_id,
            "session_id": session_id,
            "host": host,
            "data": data.decode("utf-8"),
            "size": size,
            "saved_at": time.time(),
        }

        def op(conn: Connection) -> None:
            values = {k: v for k, v in row.items() if k != "agent_id"}
            where = transcripts.c.agent_id == agent_id
            if conn.execute(sa.update(transcripts).where(where).values(values)).rowcount == 0:
                conn.execute(sa.insert(transcripts).values(row))

        await self.store._write(op)
        return size

    async def load(self, agent_id: str) -> tuple[str, str] | None:
        """``(session_id, text)`` of the agent's newest transcript, None if none
        was kept."""

        def query(conn: Connection) -> tuple[str, str] | None:
            found = conn.execute(
                sa.select(transcripts.c.session_id, transcripts.c.data).where(
                    transcripts.c.agent_id == agent_id
                )
            ).first()
            return None if found is None else (str(found.session_id), str(found.data))

        return await self.store._read(query)

    def _check_size(self, agent_id: str, size: int) -> None:
        if size > self.max_bytes:
            raise Refused(
                f"the transcript of agent {agent_id} is {_mib(size)} ({size} bytes), over the "
                f"limit of {_mib(self.max_bytes)}: not kept (a resume on another host "
                "starts a new session)",
                hint="raise AGENTDECK_TRANSCRIPT_MAX_BYTES to keep larger transcripts",
            )


def _cleaned(text: str) -> str:
    """Scrubbed as the event log is, without NUL characters."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    return scrub(text)
