"""Run the packaged Alembic migrations programmatically (no alembic.ini).

Alembic is imported only when a migration has to run: the common case — a
database already at head — is one query, which keeps every CLI command quick.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine

from agentdeck.store.head import HEAD as HEAD  # re-exported

if TYPE_CHECKING:
    from alembic.config import Config

logger = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "no migrations shipped"
    return head


def current_revision(connection: Connection) -> str | None:
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def upgrade(engine: Engine) -> None:
    """Bring the database to head; a no-op (no DDL) when it is there already.

    Runs in one write transaction (``BEGIN IMMEDIATE`` on SQLite, the advisory
    write lock on PostgreSQL, whose DDL is transactional too), so two processes
    opening a fresh database at once serialize: the second finds head.
    """
    with engine.begin() as conn:
        current = current_revision(conn)
        if current == HEAD:
            return
        if current is None and not inspect(conn).get_table_names():
            # A brand-new file: create the schema at head and stamp it, as Alembic
            # recommends; a test proves this equals running every migration.
            from agentdeck.store.schema import metadata

            logger.info("creating a new database at %s", HEAD)
            metadata.create_all(conn)
            conn.execute(
                text(
                    "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
                    "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
                )
            )
            conn.execute(text("INSERT INTO alembic_version VALUES (:v)"), {"v": HEAD})
            return
        from alembic import command

        logger.info("migrating database from %s to %s", current or "empty", HEAD)
        command.upgrade(alembic_config(conn), "head")
