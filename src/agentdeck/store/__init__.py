"""SQLite (WAL) persistence: the only writer of the database.

``Store.open(path)`` migrates and starts the writer thread; see ``store.py``.
"""

from agentdeck.store.reads import StoreStats
from agentdeck.store.store import Store

__all__ = ["Store", "StoreStats"]
