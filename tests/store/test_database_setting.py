"""``AGENTDECK_DATABASE_URL``: the forms accepted, the password never shown, the
store opened where it says, and the quick path's peek stepping aside for it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agentdeck.daemon.compose import open_store
from agentdeck.errors import ConfigError
from agentdeck.settings import Settings
from agentdeck.settings_database import hide_password
from agentdeck.store import Store
from agentdeck.store.peek import Peek
from tests.conftest import make_settings

from .conftest import db_rows, text

pytestmark = pytest.mark.anyio

SECRET = "pw-Zq81x"


def test_unset_is_the_homes_sqlite_file(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert settings.database_url is None
    assert settings.database == settings.db_path


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("postgresql+psycopg://u:p@db:5433/deck", "postgresql+psycopg://u:p@db:5433/deck"),
        ("postgresql://u@db/deck", "postgresql+psycopg://u@db/deck"),
        ("postgres://u@db/deck?sslmode=require", "postgresql+psycopg://u@db/deck?sslmode=require"),
    ],
)
def test_a_postgresql_url_is_kept_with_psycopg_named(given: str, kept: str) -> None:
    assert Settings(database_url=given).database == kept


@pytest.mark.parametrize(
    "bad",
    [
        f"mysql://u:{SECRET}@db/deck",
        f"sqlite:////home/{SECRET}.db",
        f"postgresql+asyncpg://u:{SECRET}@db/deck",
        f"postgresql://u:{SECRET}@db",
        f"/var/lib/{SECRET}.db",
    ],
)
def test_any_other_value_is_a_config_error_that_does_not_repeat_it(
    bad: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTDECK_DATABASE_URL", bad)
    with pytest.raises(ConfigError) as info:
        Settings.load()
    said = f"{info.value} {info.value.hint}"
    assert "AGENTDECK_DATABASE_URL" in said and "postgresql+psycopg://" in said
    assert SECRET not in said


def test_the_effective_settings_hide_the_password(caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(database_url=f"postgresql://deck:{SECRET}@db.example:5432/deck")
    shown = settings.redacted()["database_url"]
    assert shown == "postgresql+psycopg://deck:***@db.example:5432/deck"
    assert SECRET not in str(settings.redacted())
    assert hide_password("postgresql+psycopg://u@h/d") == "postgresql+psycopg://u@h/d"
    in_query = f"postgresql+psycopg://u@h/d?sslmode=require&password={SECRET}&x=1"
    assert hide_password(in_query) == "postgresql+psycopg://u@h/d?sslmode=require&password=***&x=1"
    assert SECRET not in str(Settings(database_url=in_query).redacted())


async def test_the_daemon_opens_the_store_the_setting_names(
    tmp_path: Path, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = pg_url.replace("agentdeck@", f"agentdeck:{SECRET}@")
    settings = make_settings(tmp_path, database_url=url)
    caplog.set_level(logging.DEBUG, logger="agentdeck")
    store = open_store(settings)
    try:
        await store.append([text("a1", 0)])
        assert not store.has_file
    finally:
        await store.close()
    assert db_rows(pg_url, "SELECT agent_id FROM events") == [("a1",)]
    assert not settings.db_path.exists()  # no SQLite file made beside it
    assert SECRET not in caplog.text


async def test_the_peek_steps_aside_when_a_database_url_is_set(db_path: Path) -> None:
    """A home's file at head, but the store is elsewhere: the file is stale, the
    quick path must not read it (Peek.open says None: the long way opens the store)."""
    async with Store.open(db_path) as store:
        await store.append([text("old", 0)])
    peek = Peek.open(db_path, environ={})
    assert peek is not None
    peek.close()
    url = "postgresql+psycopg://u@db/deck"
    assert Peek.open(db_path, environ={"AGENTDECK_DATABASE_URL": url}) is None
    assert Peek.open(db_path, environ={"agentdeck_database_url": url}) is None
    unset = Peek.open(db_path, environ={"AGENTDECK_DATABASE_URL": ""})
    assert unset is not None
    unset.close()
