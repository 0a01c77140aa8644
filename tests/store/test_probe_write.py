"""``Store.probe_write``: the readiness check's tiny write and read through the one
write path, on both backends; a closed store fails it as a write would."""

from __future__ import annotations

import pytest

from agentdeck.errors import StoreError
from agentdeck.store import Store
from agentdeck.store.head import HEAD
from tests.store.conftest import db_rows

pytestmark = pytest.mark.anyio


async def test_the_probe_writes_and_reads_back_the_schema_revision(store: Store) -> None:
    assert await store.probe_write() == HEAD
    assert await store.probe_write() == HEAD  # again: it changed nothing
    assert db_rows(store, "SELECT version_num FROM alembic_version") == [(HEAD,)]


async def test_a_closed_store_fails_the_probe(store: Store) -> None:
    await store.close()
    with pytest.raises(StoreError):
        await store.probe_write()
