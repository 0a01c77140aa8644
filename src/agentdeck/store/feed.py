"""The event log read by a process of its own: the span exporter's
(``telemetry.worker``), which builds spans from the log while the daemon only
tells it how far the log is settled. A read-only engine on the deck's database
(the SQLite file, or the PostgreSQL URL); pages of events of some types in id
order, along the primary key (``store.scan``), their data decoded.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agentdeck.core.event_types import StoredEvent
from agentdeck.errors import StoreError
from agentdeck.settings_database import describe
from agentdeck.store import dialect
from agentdeck.store.opening import hidden, reason
from agentdeck.store.scan import scan_query


class LogFeed:
    def __init__(self, target: Path | str) -> None:
        self.target = str(target)
        self.postgres = dialect.is_postgres(target)
        self.where = describe(self.target) if self.postgres else f"SQLite file {target}"
        self.engine = dialect.create_engine(target, writer=False)

    def events(
        self, *, after: int, upto: int, types: Sequence[str], limit: int
    ) -> list[StoredEvent]:
        """Events with ``after < id <= upto`` of ``types``, ascending id, at most
        ``limit``. ``StoreError`` naming the database (never its password) when it
        cannot be read."""
        stmt = scan_query(after=after, upto=upto, agent_id=None, types=types, brief={})
        try:
            with self.engine.connect() as conn:
                rows = conn.execute(stmt.limit(limit)).tuples().all()
        except (sa.exc.SQLAlchemyError, sqlite3.Error, OSError) as exc:
            said = reason(exc)
            if self.postgres:
                said = hidden(said, self.target)
            raise StoreError(f"cannot read the event log in the {self.where}: {said}") from None
        return [StoredEvent(i, a, kind, ts, _data(data)) for i, a, kind, ts, data, _n in rows]

    def close(self) -> None:
        self.engine.dispose()


def _data(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except ValueError:  # not written by the store: an event that says nothing
        return {}
    return data if type(data) is dict else {}
