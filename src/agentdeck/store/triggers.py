"""Webhook triggers in the database (the ``triggers`` and ``trigger_deliveries``
tables of migration 0014; the records in ``core.triggers``).

A delivery's row is three things at once: the replay guard (its
``(trigger, delivery_id)`` is the primary key, so a second insert of the same id
fails inside the same transaction that checks it, on both backends), the rate
limit's count (the accepted deliveries of the last minute) and the trigger's
history. Rows older than a day go when the next delivery is recorded.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.triggers import (
    REPLAY_WINDOW_SECONDS,
    Delivery,
    Trigger,
    check_name,
    check_secret,
)
from agentdeck.errors import ConfigError, NotFound, Refused, UsageError
from agentdeck.store.schema import trigger_deliveries, triggers
from agentdeck.store.store import Store

_T = triggers.c
_D = trigger_deliveries.c


class Replayed(Refused):
    """A delivery id this trigger has seen within the replay window."""


class RateLimited(Refused):
    """More accepted deliveries this minute than the trigger's rate allows."""

    http_status = 429


MAX_SECRET_FILE = 4096


def read_secret(path: str | Path) -> bytes:
    """The secret in ``path``: a regular file (no link followed), owned by this
    user, readable by nobody else (0600 or stricter), at least 16 bytes;
    ``ConfigError`` saying what is wrong otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise ConfigError(f"cannot open the secret file {str(path)!r}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"the secret file {str(path)!r} is not a regular file")
        if st.st_mode & 0o077:
            raise ConfigError(
                f"the secret file {str(path)!r} is readable by others "
                f"(mode {stat.S_IMODE(st.st_mode):04o})",
                hint=f"chmod 600 {path}",
            )
        if st.st_uid != os.geteuid():
            raise ConfigError(f"the secret file {str(path)!r} belongs to another user")
        data = os.read(fd, MAX_SECRET_FILE + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_SECRET_FILE:
        raise ConfigError(f"the secret file {str(path)!r} is over {MAX_SECRET_FILE} bytes")
    try:
        return check_secret(data)
    except UsageError as exc:
        raise ConfigError(f"the secret file {str(path)!r}: {exc}") from None


def _trigger(row: sa.Row[tuple[object, ...]]) -> Trigger:
    return Trigger.from_dict(dict(row._mapping))


def _delivery(row: sa.Row[tuple[object, ...]]) -> Delivery:
    return Delivery(**dict(row._mapping))


class TriggerStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def add(self, trigger: Trigger) -> Trigger:
        """Keep a new trigger; ``Refused`` when the name is taken."""
        check_name(trigger.name)

        def op(conn: Connection) -> None:
            if conn.execute(sa.select(_T.name).where(_T.name == trigger.name)).first():
                raise Refused(
                    f"a trigger named {trigger.name!r} exists",
                    hint=f"agentdeck trigger rm {trigger.name} first",
                )
            conn.execute(sa.insert(triggers).values(trigger.to_dict()))

        await self.store._write(op)
        return trigger

    async def get(self, name: str) -> Trigger:
        check_name(name)

        def query(conn: Connection) -> Trigger | None:
            row = conn.execute(sa.select(triggers).where(_T.name == name)).first()
            return None if row is None else _trigger(row)

        found = await self.store._read(query)
        if found is None:
            raise NotFound("trigger", name, hint="agentdeck trigger ls")
        return found

    async def all(self) -> list[Trigger]:
        def query(conn: Connection) -> list[Trigger]:
            return [_trigger(r) for r in conn.execute(sa.select(triggers).order_by(_T.name))]

        return await self.store._read(query)

    async def remove(self, name: str) -> None:
        """Forget the trigger and its deliveries; ``NotFound`` for none."""
        check_name(name)

        def op(conn: Connection) -> int:
            conn.execute(sa.delete(trigger_deliveries).where(_D.trigger == name))
            return int(conn.execute(sa.delete(triggers).where(_T.name == name)).rowcount)

        if await self.store._write(op) == 0:
            raise NotFound("trigger", name, hint="agentdeck trigger ls")

    async def admit(self, trigger: Trigger, delivery_id: str, event: str) -> Delivery:
        """Take one signed delivery: ``Replayed`` for an id seen within a day,
        ``RateLimited`` past the trigger's rate (the refusal is not kept: a flood
        leaves no rows), else its row, ``202 accepted``, kept."""
        now = time.time()
        row = Delivery(trigger.name, delivery_id, event, now, 202, "accepted")

        def op(conn: Connection) -> str | int | None:
            # Refusals are returned, not raised: a raise in a write fails its batch.
            conn.execute(
                sa.delete(trigger_deliveries).where(_D.received_at < now - REPLAY_WINDOW_SECONDS)
            )
            where = (_D.trigger == trigger.name) & (_D.delivery_id == delivery_id)
            if conn.execute(sa.select(_D.status).where(where)).first() is not None:
                return "replayed"
            recent = int(
                conn.execute(
                    sa.select(sa.func.count())
                    .select_from(trigger_deliveries)
                    .where(
                        (_D.trigger == trigger.name)
                        & (_D.received_at >= now - 60.0)
                        & (_D.status < 300)
                    )
                ).scalar_one()
            )
            if recent >= trigger.rate_per_min:
                return recent
            conn.execute(sa.insert(trigger_deliveries).values(row.to_dict()))
            return None

        refused = await self.store._write(op)
        if refused == "replayed":
            raise Replayed(f"delivery {delivery_id!r} was seen before: not run twice")
        if refused is not None:
            raise RateLimited(
                f"trigger {trigger.name!r} took {refused} deliveries this minute, "
                f"its limit is {trigger.rate_per_min}/min"
            )
        return row

    async def settle(
        self,
        trigger: str,
        delivery_id: str,
        *,
        status: int,
        outcome: str,
        agent_id: str | None = None,
        payload: str | None = None,
    ) -> None:
        """What came of an admitted delivery: the agent it started (and the
        scrubbed payload), or why none did."""

        def op(conn: Connection) -> None:
            conn.execute(
                sa.update(trigger_deliveries)
                .where((_D.trigger == trigger) & (_D.delivery_id == delivery_id))
                .values(status=status, outcome=outcome[:500], agent_id=agent_id, payload=payload)
            )

        await self.store._write(op)

    async def deliveries(self, name: str, *, limit: int = 20) -> list[Delivery]:
        """The trigger's newest deliveries (within the last day), newest first."""
        check_name(name)

        def query(conn: Connection) -> list[Delivery]:
            rows = conn.execute(
                sa.select(trigger_deliveries)
                .where(_D.trigger == name)
                .order_by(_D.received_at.desc())
                .limit(limit)
            )
            return [_delivery(r) for r in rows]

        return await self.store._read(query)
