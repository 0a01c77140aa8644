"""``Store``: the event log, the agent board and the steering queue in one
database: a SQLite file (the default) or PostgreSQL (a ``postgresql+psycopg://``
URL; ``store.dialect`` holds what differs). Implements ``EventLog``,
``AgentRepository`` and ``CommandQueue``.

Threading model: every write goes through one ``Writer`` thread (batched, one
transaction per batch); every read runs in a worker thread on a separate,
read-only connection pool. Nothing here blocks the event loop except
``Store.open`` and ``integrity_check``, which are synchronous by design (call
them at start-up, or through ``anyio.to_thread.run_sync``). Async methods
must be awaited on an asyncio loop.

A full disk fails writes with ``DiskFull`` (and the log says what was not
written); on SQLite the store keeps a little room in reserve (``store.reserve``)
for the writes marked essential, an agent's last state, so the board can say why
it ended. Reads go on working.

Every event is scrubbed (``core.event_scrub``: secrets redacted, ``<private>``
parts dropped) before it is written or handed to a subscriber, whoever wrote it;
an event with much text is scrubbed in a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from agentdeck.core.agent import Agent, AgentSource, AgentState, find_agent
from agentdeck.core.audit import AuditEntry, AuditRecord, ChainVerifier, VerifyResult
from agentdeck.core.event_scrub import LARGE_TEXT, scrub_event, text_weight
from agentdeck.core.events import Event, StoredEvent
from agentdeck.core.ports import Command, Subscriber
from agentdeck.errors import NotFound, StoreError, UsageError
from agentdeck.settings_database import is_database_url, normalise
from agentdeck.store import audit, dialect, listen, opening, reads, scan, writes
from agentdeck.store.cluster import ClusterParts
from agentdeck.store.reads import StoreStats
from agentdeck.store.rows import agent_to_row, event_to_row
from agentdeck.store.schema import metadata
from agentdeck.store.work import WorkResult
from agentdeck.store.writer import Writer

logger = logging.getLogger(__name__)

T = TypeVar("T")

CLOSE_TIMEOUT_SECONDS = 30.0


class Store(ClusterParts):
    def __init__(
        self,
        db_path: Path | None,
        write_engine: Engine,
        read_engine: Engine,
        writer: Writer,
        *,
        name: str | None = None,
    ):
        """Use ``Store.open``."""
        self._db_path = db_path
        self.name = name or str(db_path)  # what messages call it: never a password
        self._write_engine = write_engine
        self._read_engine = read_engine
        self._writer = writer
        self._listener = None  # LISTEN's thread, from the first ``listen`` (PostgreSQL)
        self._closed = False

    # --- lifecycle ----------------------------------------------------------

    @property
    def db_path(self) -> Path:
        """The SQLite file; ``StoreError`` for a store in PostgreSQL (no file)."""
        if self._db_path is None:
            raise StoreError(f"the store is the {self.name}: it has no file")
        return self._db_path

    @property
    def has_file(self) -> bool:
        """Whether the store is a file in the home (SQLite), so that files next to
        it (stamps, the reserve) are seen by every process that uses it."""
        return self._db_path is not None

    @classmethod
    def open(cls, target: Path | str, *, batch_size: int = 500) -> Store:
        """Open the SQLite file ``target`` (a path), or the PostgreSQL database
        ``target`` names (a ``postgresql+psycopg://`` URL): migrate to head, start
        the writer.

        Synchronous (a few milliseconds; migrations on first use). Raises
        ``StoreError`` naming the file, or the server and database (never a
        password), when it cannot be reached, created, or migrated, or is not
        an agentdeck database; nothing is left running then. A URL of another
        kind is a ``UsageError`` saying which forms are accepted.
        """
        if is_database_url(target):
            try:
                url = normalise(str(target))
            except ValueError as exc:
                hint = "set AGENTDECK_DATABASE_URL to such a URL"
                raise UsageError(str(exc), hint=hint) from None
            write_engine, read_engine, writer, name = opening.postgres(url, batch_size)
            return cls(None, write_engine, read_engine, writer, name=name)
        db_path = Path(target).expanduser().absolute()
        write_engine, read_engine, writer = opening.sqlite(db_path, batch_size)
        return cls(db_path, write_engine, read_engine, writer)

    async def close(self) -> None:
        """Commit everything submitted before the call, stop the writer (bounded
        by ``CLOSE_TIMEOUT_SECONDS``), release the connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
        stopped = await anyio.to_thread.run_sync(self._writer.stop, CLOSE_TIMEOUT_SECONDS)
        if not stopped:
            logger.error("store writer did not stop within %ss", CLOSE_TIMEOUT_SECONDS)
        if not await anyio.to_thread.run_sync(self._stop_listening):
            logger.error("store listener did not stop in time")
        self._read_engine.dispose()
        self._write_engine.dispose()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- events ---------------------------------------------------------------

    async def append(self, events: Sequence[Event]) -> list[StoredEvent]:
        """Append and return once committed; ids ascend in the order given."""
        return await self.record(events)

    async def record(
        self, events: Sequence[Event], agent: Agent | None = None, *, essential: bool = False
    ) -> list[StoredEvent]:
        """Append ``events`` and upsert ``agent`` in the same transaction, so the
        board never disagrees with the log. The events are scrubbed first.
        ``essential`` (an agent's last state) may use the room kept in reserve
        when the disk is full; ``DiskFull`` if it still does not fit."""
        if events:
            events = await _scrubbed(events)
        rows = [event_to_row(e) for e in events]
        agent_rows = [agent_to_row(agent)] if agent is not None else []
        if not rows and not agent_rows:
            return []
        result = await self._writer.submit(rows, agent_rows, essential=essential)
        return result.events

    async def read(
        self,
        *,
        after: int = 0,
        agent_id: str | None = None,
        types: Sequence[str] | None = None,
        limit: int = 1000,
    ) -> list[StoredEvent]:
        """Committed events with ``id > after``, ascending id."""
        return await self._read(
            functools.partial(
                reads.read_events, after=after, agent_id=agent_id, types=types, limit=limit
            )
        )

    async def read_tail(
        self, *, agent_id: str | None = None, before: int | None = None, limit: int = 200
    ) -> list[StoredEvent]:
        """The newest ``limit`` committed events with ``id < before`` (all when
        ``before`` is None), of one agent if given; ascending id. Index-backed,
        so a page of a long log costs the same as a page of a short one."""
        return await self._read(
            functools.partial(reads.read_tail, agent_id=agent_id, before=before, limit=limit)
        )

    async def read_rows(
        self,
        *,
        after: int = 0,
        upto: int | None = None,
        agent_id: str | None = None,
        types: Sequence[str] | None = None,
        brief: Mapping[str, str] | None = None,
        limit: int = 1000,
    ) -> list[scan.EventRow]:
        """``read``'s events as plain rows, their data undecoded (``store.scan``): a
        page of a pass over a long log costs its own rows, not the log's."""
        return await self._read(
            functools.partial(
                scan.scan_events,
                after=after,
                upto=upto,
                agent_id=agent_id,
                types=types,
                brief=brief or {},
                limit=limit,
            )
        )

    async def last_event_id(self) -> int:
        """0 when the log is empty."""
        return await self._read(reads.last_event_id)

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(events)`` after each commit with the events this
        process wrote, in id order; returns the unsubscribe function.

        The callback runs ON THE WRITER THREAD: keep it short and non-blocking,
        and hand over to a loop with ``loop.call_soon_threadsafe``. Events
        written by other processes are not delivered; poll ``read(after=...)``.
        """
        return self._writer.subscribe(callback)

    def unsettled_floor(self) -> int | None:
        """The first event id this process wrote whose writers have not been told
        yet (None: none): a reader of the log hands nothing on from there before
        they are (``store.writer``)."""
        return self._writer.unsettled_floor()

    # --- agents ---------------------------------------------------------------

    async def save_agent(self, agent: Agent) -> None:
        await self._writer.submit(agent_rows=[agent_to_row(agent)])

    async def amend_extra(
        self,
        agent_id: str,
        *,
        set_: dict[str, Any] | None = None,
        append: dict[str, Any] | None = None,
    ) -> None:
        """Change keys of the agent's ``extra`` (a ``None`` value removes one) and
        append to lists in it, in one write: the rest of the row stays as it is
        (never a stale copy of it). For an agent no process of ours supervises."""
        op = functools.partial(
            writes.amend_extra, agent_id=agent_id, set_=set_ or {}, append=append or {}
        )
        if not await self._write(op):
            raise NotFound("agent", agent_id)

    async def set_archived(self, agent_id: str, archived: bool = True) -> None:
        found = await self._write(
            functools.partial(writes.set_archived, agent_id=agent_id, archived=archived)
        )
        if not found:
            raise NotFound("agent", agent_id)

    async def get_agent(self, agent_id: str) -> Agent:
        agent = await self._read(functools.partial(reads.get_agent, agent_id=agent_id))
        if agent is None:
            raise NotFound("agent", agent_id, hint="see `agentdeck ls`")
        return agent

    async def agent_for_session(self, session_id: str, source: AgentSource) -> Agent | None:
        """The newest agent of ``source`` with this Claude session id, if any."""
        return await self._read(
            functools.partial(reads.agent_for_session, session_id=session_id, source=str(source))
        )

    async def find_agent(self, ref: str) -> Agent:
        """By exact id, else unique id prefix (at least 4 characters), else
        unique exact name. Ambiguous → ``UsageError`` listing the candidates."""
        return await self._read(functools.partial(_find_agent, ref=ref))

    async def list_agents(
        self,
        *,
        states: Sequence[AgentState] | None = None,
        text: str | None = None,
        include_archived: bool = False,
        limit: int = 100,
        offset: int = 0,
        parent: str | None = None,
        roots: bool = False,
    ) -> list[Agent]:
        """Newest (by creation) first. ``text`` matches name, id, cwd or spec;
        ``parent`` keeps one agent's children, ``roots`` the agents without a parent."""
        return await self._read(
            functools.partial(
                reads.list_agents,
                states=states,
                text=text,
                include_archived=include_archived,
                limit=limit,
                offset=offset,
                parent=parent,
                roots=roots,
            )
        )

    async def children(self, parent_ids: Sequence[str], *, limit: int = 10_000) -> list[Agent]:
        """The direct children of these agents, oldest first (archived included)."""
        return await self._read(
            functools.partial(reads.children_of, parent_ids=list(parent_ids), limit=limit)
        )

    async def descendants(self, root_ids: Sequence[str], *, limit: int = 10_000) -> list[Agent]:
        """Every agent below these, level by level (archived included)."""
        return await self._read(
            functools.partial(reads.descendants, root_ids=list(root_ids), limit=limit)
        )

    async def stats(self) -> StoreStats:
        """``agents_by_state`` counts non-archived agents; totals count all."""
        return await self._read(reads.stats)

    # --- commands -------------------------------------------------------------

    async def enqueue_command(self, agent_id: str, kind: str, payload: dict[str, Any]) -> int:
        """Queue a steering command for the agent's process, wherever it runs (on
        PostgreSQL a NOTIFY on ``agentdeck_commands`` with the agent id wakes it)."""
        op = functools.partial(
            _enqueue, agent_id=agent_id, kind=kind, payload=payload, now=time.time()
        )
        return int(await self._write(op))

    async def claim_commands(self, agent_ids: Sequence[str], claimer: str) -> list[Command]:
        """Atomically claim every unclaimed command for ``agent_ids``, oldest
        first; a command is handed to exactly one claimer, across processes."""
        op = functools.partial(
            writes.claim_commands, agent_ids=list(agent_ids), claimer=claimer, now=time.time()
        )
        result: list[Command] = await self._write(op)
        return result

    async def get_command(self, command_id: int) -> Command:
        command = await self._read(functools.partial(reads.get_command, command_id=command_id))
        if command is None:
            raise NotFound("command", str(command_id))
        return command

    async def command_claimed(self, command_id: int) -> bool:
        """Whether some process has taken the command (the enqueuer polls this)."""
        return (await self.get_command(command_id)).claimed_at is not None

    async def list_commands(self, agent_id: str) -> list[Command]:
        """All commands for the agent, claimed or not, oldest first."""
        return await self._read(functools.partial(reads.list_commands, agent_id=agent_id))

    # --- audit ----------------------------------------------------------------

    async def append_audit(self, record: AuditRecord) -> AuditEntry:
        """Chain one decision onto the audit log; returns it once committed.

        Reading the head and inserting happen in one write transaction, so the
        chain stays linear across processes."""
        entry: AuditEntry = (await self.queue_audit(record)).value
        return entry

    def queue_audit(self, record: AuditRecord) -> asyncio.Future[WorkResult]:
        """Chain one decision onto the audit log, queued now, in order with every
        write after it; the future settles once it is committed (its ``value``:
        the entry). For a decision answered before its entry is written."""
        return self._writer.queue(op=functools.partial(audit.append_entry, record=record))

    async def read_audit(
        self, *, after: int = 0, limit: int = 1000, agent_id: str | None = None
    ) -> list[AuditEntry]:
        """Audit entries with ``id > after``, ascending id."""
        return await self._read(
            functools.partial(audit.read_entries, after=after, limit=limit, agent_id=agent_id)
        )

    async def read_audit_tail(
        self, *, limit: int = 50, agent_id: str | None = None
    ) -> list[AuditEntry]:
        """The newest ``limit`` audit entries (of one agent, if given), ascending id."""
        return await self._read(functools.partial(audit.read_tail, limit=limit, agent_id=agent_id))

    async def verify_audit(self, *, page_size: int = 2000) -> VerifyResult:
        """Verify the chain up to the entry that was newest when called, one
        page (and one read transaction) at a time: memory stays flat."""
        verifier = ChainVerifier()
        end = await self._read(audit.last_id)
        after = 0
        while after < end:
            page = await self.read_audit(after=after, limit=page_size)
            for entry in page:
                if entry.id > end:
                    return verifier.result()
                if verifier.feed(entry) is not None:
                    return verifier.result()
                after = entry.id
            if not page:
                break
        return verifier.result()

    async def spend_since(self, ts: float) -> float:
        """USD spent by every agent in events at or after ``ts`` (see
        ``store.audit.spend_since`` for how per-process costs are differenced)."""
        return await self._read(functools.partial(audit.spend_since, since=ts))

    # --- maintenance ----------------------------------------------------------

    def integrity_check(self) -> str:
        """``"ok"`` when the database is sound, else its problems one per line
        (SQLite: ``PRAGMA integrity_check``; PostgreSQL: the schema's tables and
        id sequences, see ``dialect_postgres``). Blocking."""
        with self._read_engine.connect() as conn:
            return dialect.integrity_check(conn, metadata.sorted_tables)

    async def probe_write(self) -> str:
        """A tiny write and read through the one write path (``/readyz``): the
        schema's revision written over itself and read back. Fails as a write would
        (``DiskFull``, ``StoreError``)."""
        value: str = await self._write(_touch)
        return value

    # --- plumbing -------------------------------------------------------------

    async def _write(self, op: Callable[[Connection], Any]) -> Any:
        return (await self._writer.submit(op=op)).value

    async def _read(self, query: Callable[[Connection], T]) -> T:
        if self._closed:
            raise StoreError("the store is closed", hint="open it again to read")
        return await anyio.to_thread.run_sync(self._read_sync, query)

    def _read_sync(self, query: Callable[[Connection], T]) -> T:
        try:
            with self._read_engine.connect() as conn:
                return query(conn)
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(f"reading {self.name} failed: {_reason(exc)}") from exc


def _touch(conn: Connection) -> str:
    conn.execute(sa.text("UPDATE alembic_version SET version_num = version_num"))
    return str(conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one())


def _enqueue(
    conn: Connection, agent_id: str, kind: str, payload: dict[str, Any], now: float
) -> int:
    command_id = writes.enqueue_command(conn, agent_id, kind, payload, now)
    listen.send(conn, listen.COMMANDS, agent_id)
    return command_id


def _find_agent(conn: Connection, ref: str) -> Agent:
    return find_agent(
        ref,
        by_id=lambda r: reads.get_agent(conn, r),
        by_prefix=lambda r: reads.agents_with_id_prefix(conn, r),
        by_name=lambda r: reads.agents_named(conn, r),
    )


async def _scrubbed(events: Sequence[Event]) -> list[Event]:
    weight = 0
    for event in events:
        weight += text_weight(event, LARGE_TEXT - weight)
        if weight >= LARGE_TEXT:  # tens of milliseconds: not on the event loop
            return await anyio.to_thread.run_sync(lambda: [scrub_event(e) for e in events])
    return [scrub_event(e) for e in events]


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc)
