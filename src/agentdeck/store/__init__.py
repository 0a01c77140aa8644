"""Persistence in SQLite (WAL; the default) or PostgreSQL: the only writer of the database.

``Store.open(path_or_url)`` migrates and starts the writer thread; see ``store.py``.
``peek`` reads without SQLAlchemy, for the CLI's quick path. The names below load
on first use, so importing ``agentdeck.store.peek`` does not load the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentdeck.store.reads import StoreStats
    from agentdeck.store.store import Store

__all__ = ["Store", "StoreStats"]


def __getattr__(name: str) -> Any:
    if name == "Store":
        from agentdeck.store.store import Store

        return Store
    if name == "StoreStats":
        from agentdeck.store.reads import StoreStats

        return StoreStats
    raise AttributeError(name)
