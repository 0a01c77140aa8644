"""Schedules in the database (the ``schedules`` and ``schedule_runs`` tables of
migration 0015; the records in ``core.schedules``).

A due time is claimed by moving the schedule's ``next_at`` on from the value the
scheduler read (``claim``: an ``UPDATE ... WHERE next_at = <read>``), so two
schedulers on one database (or a manual run racing a due one) never start the same
due time twice. A run's row is the schedule's history; a ``queued`` one is also the
run waiting for the previous run's agent to end.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.redact import scrub
from agentdeck.core.schedules import RunOutcome, Schedule, ScheduleRun, check_name
from agentdeck.errors import NotFound, Refused
from agentdeck.store.schema_schedules import schedule_runs, schedules
from agentdeck.store.store import Store

_S = schedules.c
_R = schedule_runs.c
MAX_REASON = 500


def new_run_id() -> str:
    return "r" + uuid.uuid4().hex[:15]


def _schedule(row: sa.Row[tuple[object, ...]]) -> Schedule:
    return Schedule.from_dict(dict(row._mapping))


def _run(row: sa.Row[tuple[object, ...]]) -> ScheduleRun:
    return ScheduleRun.from_dict(dict(row._mapping))


def _not_found(name: str) -> NotFound:
    return NotFound("schedule", name, hint="agentdeck schedule ls")


class ScheduleStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def add(self, schedule: Schedule) -> Schedule:
        """Keep a new schedule (its prompt scrubbed); ``Refused`` when the name is
        taken."""
        check_name(schedule.name)
        data = schedule.to_dict()
        data["prompt"] = scrub(schedule.prompt)

        def op(conn: Connection) -> bool:
            if conn.execute(sa.select(_S.name).where(_S.name == schedule.name)).first():
                return False  # returned, not raised: a raise in a write fails its batch
            conn.execute(sa.insert(schedules).values(data))
            return True

        if not await self.store._write(op):
            raise Refused(
                f"a schedule named {schedule.name!r} exists",
                hint=f"agentdeck schedule rm {schedule.name} first",
            )
        return Schedule.from_dict(data)

    async def get(self, name: str) -> Schedule:
        check_name(name)

        def query(conn: Connection) -> Schedule | None:
            row = conn.execute(sa.select(schedules).where(_S.name == name)).first()
            return None if row is None else _schedule(row)

        found = await self.store._read(query)
        if found is None:
            raise _not_found(name)
        return found

    async def all(self) -> list[Schedule]:
        def query(conn: Connection) -> list[Schedule]:
            return [_schedule(r) for r in conn.execute(sa.select(schedules).order_by(_S.name))]

        return await self.store._read(query)

    async def remove(self, name: str) -> None:
        """Forget the schedule and its history; ``NotFound`` for none (its agents stay)."""
        check_name(name)

        def op(conn: Connection) -> int:
            conn.execute(sa.delete(schedule_runs).where(_R.schedule == name))
            return int(conn.execute(sa.delete(schedules).where(_S.name == name)).rowcount)

        if await self.store._write(op) == 0:
            raise _not_found(name)

    async def set_paused(self, name: str, paused: bool, next_at: float | None = None) -> Schedule:
        """Pause or resume; a resumed schedule's next due time is ``next_at`` (what it
        missed while paused is not run)."""
        check_name(name)
        values: dict[str, object] = {"paused": paused}
        if next_at is not None:
            values["next_at"] = next_at

        def op(conn: Connection) -> int:
            return int(
                conn.execute(sa.update(schedules).where(_S.name == name).values(values)).rowcount
            )

        if await self.store._write(op) == 0:
            raise _not_found(name)
        return await self.get(name)

    async def due(self, now: float) -> list[Schedule]:
        """The schedules not paused whose next due time has come."""

        def query(conn: Connection) -> list[Schedule]:
            rows = conn.execute(
                sa.select(schedules)
                .where((_S.next_at <= now) & (_S.paused == sa.false()))
                .order_by(_S.next_at)
            )
            return [_schedule(r) for r in rows]

        return await self.store._read(query)

    async def soonest(self) -> float | None:
        """The earliest next due time of a schedule not paused."""

        def query(conn: Connection) -> float | None:
            value = conn.execute(
                sa.select(sa.func.min(_S.next_at)).where(_S.paused == sa.false())
            ).scalar()
            return None if value is None else float(value)

        return await self.store._read(query)

    async def claim(self, schedule: Schedule, next_at: float, run: ScheduleRun) -> bool:
        """Move ``schedule``'s next due time on to ``next_at`` and record ``run``, if
        its next due time is still the one read (else another claimed it: False)."""

        def op(conn: Connection) -> bool:
            moved = conn.execute(
                sa.update(schedules)
                .where((_S.name == schedule.name) & (_S.next_at == schedule.next_at))
                .values(next_at=next_at)
            ).rowcount
            if not moved:
                return False
            conn.execute(sa.insert(schedule_runs).values(_row(run)))
            return True

        return bool(await self.store._write(op))

    async def record(self, run: ScheduleRun) -> ScheduleRun:
        await self.store._write(
            lambda conn: conn.execute(sa.insert(schedule_runs).values(_row(run)))
        )
        return run

    async def settle(
        self,
        run_id: str,
        outcome: RunOutcome,
        *,
        at: float,
        reason: str = "",
        agent_id: str | None = None,
        expected: RunOutcome | None = None,
    ) -> bool:
        """What came of a run: its agent, or why none started. With ``expected``,
        only if the run's outcome is still that (a queued run is started once)."""
        where = _R.id == run_id
        if expected is not None:
            where = where & (_R.outcome == str(expected))

        def op(conn: Connection) -> int:
            return int(
                conn.execute(
                    sa.update(schedule_runs)
                    .where(where)
                    .values(
                        outcome=str(outcome), at=at, reason=reason[:MAX_REASON], agent_id=agent_id
                    )
                ).rowcount
            )

        return bool(await self.store._write(op))

    async def runs(self, name: str, *, limit: int = 20) -> list[ScheduleRun]:
        """The schedule's newest runs, newest first."""
        check_name(name)

        def query(conn: Connection) -> list[ScheduleRun]:
            rows = conn.execute(
                sa.select(schedule_runs)
                .where(_R.schedule == name)
                .order_by(_R.at.desc(), _R.due_at.desc())
                .limit(limit)
            )
            return [_run(r) for r in rows]

        return await self.store._read(query)

    async def queued(self, name: str | None = None) -> list[ScheduleRun]:
        """Runs waiting for their previous run's agent to end (oldest first)."""
        where = _R.outcome == str(RunOutcome.QUEUED)
        if name is not None:
            where = where & (_R.schedule == name)

        def query(conn: Connection) -> list[ScheduleRun]:
            rows = conn.execute(sa.select(schedule_runs).where(where).order_by(_R.due_at))
            return [_run(r) for r in rows]

        return await self.store._read(query)

    async def agents_since(self, name: str, since: float) -> list[str]:
        """The agents the schedule's runs started since ``since`` (newest first)."""

        def query(conn: Connection) -> list[str]:
            rows = conn.execute(
                sa.select(_R.agent_id)
                .where(
                    (_R.schedule == name)
                    & (_R.at >= since)
                    & (_R.agent_id.is_not(None))
                    & (_R.outcome == str(RunOutcome.STARTED))
                )
                .order_by(_R.at.desc())
            )
            return [str(r[0]) for r in rows]

        return await self.store._read(query)

    async def last_agent(self, name: str) -> str | None:
        """The agent of the schedule's newest run that started one."""

        def query(conn: Connection) -> str | None:
            row = conn.execute(
                sa.select(_R.agent_id)
                .where((_R.schedule == name) & (_R.agent_id.is_not(None)))
                .order_by(_R.at.desc())
                .limit(1)
            ).first()
            return None if row is None else str(row[0])

        return await self.store._read(query)


def _row(run: ScheduleRun) -> dict[str, object]:
    data = run.to_dict()
    data["reason"] = run.reason[:MAX_REASON]
    return data
