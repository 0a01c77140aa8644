"""Finding a row of a table with a text id by the id or a unique prefix of it
(what people type: ``ap3f2a``, ``ak9d55``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.agent import MIN_PREFIX
from agentdeck.store.store import Store

T = TypeVar("T")


async def by_id_or_prefix(
    store: Store,
    table: sa.Table,
    ref: str,
    convert: Callable[[Any], T],
    get: Callable[[str], Awaitable[T]],
) -> T:
    """The row whose id is ``ref``, else the only one whose id starts with it
    (4+ characters); otherwise ``get(ref)``, which names what is missing."""
    if len(ref) < MIN_PREFIX:
        return await get(ref)

    def query(conn: Connection) -> list[T]:
        pattern = ref.replace("%", r"\%").replace("_", r"\_") + "%"
        stmt = sa.select(table).where(table.c.id.like(pattern, escape="\\"))
        return [convert(r) for r in conn.execute(stmt.limit(3))]

    found = await store._read(query)
    exact = [item for item in found if getattr(item, "id", None) == ref]
    if exact or len(found) == 1:
        return (exact or found)[0]
    return await get(ref)
