"""Opening a store's database: the engines, the migrations, the writer thread.

``sqlite`` for a file in the home (its directory made, the disk-full reserve
next to it); ``postgres`` for a ``postgresql+psycopg://`` URL (no reserve: the
server keeps its disk; the writer writes again after a lost connection). Either
raises ``StoreError`` naming the file, or the server and database (never the
password), and leaves nothing running.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from agentdeck.errors import StoreError
from agentdeck.settings_database import describe, hide_password
from agentdeck.store import dialect, migrate
from agentdeck.store.reserve import Reserve
from agentdeck.store.writer import Writer

logger = logging.getLogger(__name__)


def sqlite(db_path: Path, batch_size: int) -> tuple[Engine, Engine, Writer]:
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the directory for the database {db_path}: {exc.strerror or exc}",
            hint="set AGENTDECK_HOME to a writable directory",
        ) from exc
    write_engine = dialect.create_engine(db_path, writer=True)
    read_engine = dialect.create_engine(db_path, writer=False)
    try:
        migrate.upgrade(write_engine)
        conn = write_engine.connect()
    except (sa.exc.SQLAlchemyError, sqlite3.Error, OSError) as exc:
        write_engine.dispose()
        read_engine.dispose()
        raise StoreError(
            f"cannot open the database {db_path}: {reason(exc)}",
            hint="check that the file is an agentdeck database and the directory is "
            "writable; move a damaged file aside to start afresh",
        ) from exc
    reserve = Reserve(db_path.with_name(db_path.name + ".reserve"))
    reserve.make()
    writer = Writer(conn, batch_size=batch_size, path=db_path, reserve=reserve)
    writer.start()
    logger.info("store open: %s", db_path)
    return write_engine, read_engine, writer


def postgres(url: str, batch_size: int) -> tuple[Engine, Engine, Writer, str]:
    """The engines, the started writer and the database's name for messages."""
    name = describe(url)
    write_engine = dialect.create_engine(url, writer=True)
    read_engine = dialect.create_engine(url, writer=False)
    try:
        migrate.upgrade(write_engine)
        conn = write_engine.connect()
    except (sa.exc.SQLAlchemyError, OSError) as exc:
        write_engine.dispose()
        read_engine.dispose()
        raise StoreError(
            f"cannot open the {name}: {hidden(reason(exc), url)}",
            hint="check that the server runs and is reachable, that the database "
            "exists and that the user may use it (AGENTDECK_DATABASE_URL)",
        ) from None
    writer = Writer(conn, batch_size=batch_size, where=name, reconnect=dialect.is_disconnect)
    writer.start()
    logger.info("store open: %s", hide_password(url))
    return write_engine, read_engine, writer, name


def reason(exc: BaseException) -> str:
    """The driver's own words, not SQLAlchemy's rendering (which carries the
    statement and its parameters)."""
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc)


def hidden(text: str, url: str) -> str:
    """``text`` with the URL's password, should a driver ever repeat it, hidden."""
    password = sa.make_url(url).password
    return text.replace(password, "***") if password else text
