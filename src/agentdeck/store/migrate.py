"""Run the packaged Alembic migrations programmatically (no alembic.ini)."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

logger = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "no migrations shipped"
    return head


def current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine) -> None:
    """Bring the database to head; a no-op (no DDL) when it is there already.

    Runs in one write transaction (``BEGIN IMMEDIATE`` on SQLite), so two
    processes opening a fresh file at once serialize: the second finds head.
    """
    head = head_revision()
    with engine.begin() as conn:
        current = current_revision(conn)
        if current == head:
            return
        logger.info("migrating database from %s to %s", current or "empty", head)
        command.upgrade(alembic_config(conn), "head")
