from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from agentdeck.errors import StoreError
from agentdeck.store import Store, dialect
from tests.support.fs import unwritable

from .conftest import text

pytestmark = pytest.mark.anyio


async def _usable(db_path: Path) -> None:
    async with Store.open(db_path) as store:
        await store.append([text("a", 0)])
        assert await store.last_event_id() >= 1
        assert store.integrity_check() == "ok"


async def test_home_under_a_file_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("I am a file, not a directory")
    db_path = blocker / "agentdeck.db"
    with pytest.raises(StoreError) as info:
        Store.open(db_path)
    assert str(db_path) in str(info.value)
    assert info.value.hint
    blocker.unlink()
    await _usable(db_path)  # nothing left behind that breaks the next open


async def test_unwritable_home_is_a_store_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with unwritable(home):
        with pytest.raises(StoreError) as info:
            Store.open(home / "sub" / "agentdeck.db")
        assert str(home / "sub") in str(info.value)
        with pytest.raises(StoreError, match="agentdeck.db"):
            Store.open(home / "agentdeck.db")
        assert list(home.iterdir()) == []  # nothing half-created
    await _usable(home / "agentdeck.db")


async def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    db_path = tmp_path / "agentdeck.db"
    garbage = b"this is not an SQLite database\n" * 200
    db_path.write_bytes(garbage)
    with pytest.raises(StoreError) as info:
        Store.open(db_path)
    assert str(db_path) in str(info.value)
    assert "not a database" in str(info.value)
    assert db_path.read_bytes() == garbage  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agentdeck.db"]
    db_path.unlink()
    await _usable(db_path)


async def test_a_directory_in_place_of_the_file_is_a_store_error(tmp_path: Path) -> None:
    db_path = tmp_path / "agentdeck.db"
    db_path.mkdir()
    with pytest.raises(StoreError, match="agentdeck.db"):
        Store.open(db_path)


async def test_write_lock_held_elsewhere_fails_cleanly_then_recovers(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dialect, "BUSY_TIMEOUT_MS", 200)
    async with Store.open(db_path) as store:
        other = sqlite3.connect(db_path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            results = await asyncio.gather(
                *(store.append([text("a", i)]) for i in range(5)), return_exceptions=True
            )
            assert all(isinstance(r, StoreError) and "locked" in str(r) for r in results)
            other.execute("ROLLBACK")
        finally:
            other.close()
        stored = await store.append([text("a", 99)])
        assert [e.data["text"] for e in await store.read()] == ["msg 99"]
        assert stored[0].id == 1
