"""``store.copy``: a SQLite home's database into a real PostgreSQL (``pg_url``).

Every table, every row, ids kept, the sequences past them; run twice, nothing
twice; another deck's data, a bad URL, an unreachable server, a target at another
revision, a missing, empty or damaged file: one clear error, nothing written.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from agentdeck.core.events import AssistantText
from agentdeck.core.memory import Observation
from agentdeck.errors import StoreError, UsageError
from agentdeck.store import Store
from agentdeck.store.copy import TableCopied, copy_database
from agentdeck.store.copy_plan import memory_fts, plan
from agentdeck.store.memory import MemoryStore
from agentdeck.store.memory_search_pg import index_text
from agentdeck.store.schema import agents, audit, events, metadata, notify_dead
from tests.support.decks_to_copy import T0, fill_home, prepare_pg
from tests.support.pgcluster import _free_port


@pytest.fixture
def home_db(tmp_path: Path) -> Path:
    return fill_home(tmp_path / "home" / "agentdeck.db")


@pytest.fixture
def target(pg_url: str) -> str:
    prepare_pg(pg_url)
    return pg_url


def indexed(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "title": index_text(row["title"]), "body": index_text(row["body"])}


def rows(url: str, table: sa.Table) -> dict[tuple[Any, ...], dict[str, Any]]:
    engine = sa.create_engine(url)
    key = list(table.primary_key.columns)
    try:
        with engine.connect() as conn:
            return {
                tuple(r[c.name] for c in key): dict(r)
                for r in conn.execute(sa.select(*table.c)).mappings()
            }
    finally:
        engine.dispose()


def sqlite_url(db: Path) -> str:
    return f"sqlite:///{db}"


def counts(url: str) -> dict[str, int]:
    return {p.name: len(rows(url, p.table)) for p in plan()}


def test_every_table_of_the_schema_is_planned_and_filled(home_db: Path) -> None:
    planned = {p.name for p in plan()}
    assert planned == set(metadata.tables) | {"memory_fts"}
    # The tests below copy every table with rows in it: none is left out.
    assert all(counts(sqlite_url(home_db)).values()), counts(sqlite_url(home_db))


def test_a_table_the_copier_does_not_know_how_to_copy_fails_loudly() -> None:
    keyless = sa.Table("keyless", sa.MetaData(), sa.Column("x", sa.Text))
    with pytest.raises(StoreError, match="does not know how to copy table keyless: no key"):
        plan([keyless])
    blob = sa.Table(
        "blobs",
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("data", sa.LargeBinary),
    )
    with pytest.raises(StoreError, match=r"does not know how to copy blobs\.data"):
        plan([blob])


def test_every_row_is_copied_with_its_ids_and_the_chain_verifies(
    home_db: Path, target: str
) -> None:
    report = copy_database(home_db, target, batch=7)  # several pages per table
    for p in plan():
        source = rows(sqlite_url(home_db), p.table)
        if p.table is memory_fts:  # as the store on PostgreSQL indexes it (index_text)
            source = {k: indexed(r) for k, r in source.items()}
        assert rows(target, p.table) == source, p.name
    by_name = {t.table: t for t in report.tables}
    assert by_name["events"].copied == by_name["events"].total == 40
    assert all(t.present == 0 and t.copied == t.total for t in report.tables)
    assert report.audit.ok and report.audit.count == 5 and not report.created_schema
    assert "memory_fts" in by_name and by_name["memory_fts"].copied == 2


@pytest.mark.anyio
async def test_the_store_opens_the_copy_and_goes_on_from_it(home_db: Path, pg_url: str) -> None:
    report = copy_database(home_db, pg_url)  # an empty database: the schema made here
    assert report.created_schema
    store = Store.open(pg_url)
    try:
        assert [a.id for a in await store.list_agents()] == ["a0002", "a0001", "a0000"]
        resumed = await store.read(after=35)  # a follower resuming by id
        assert [e.id for e in resumed] == [36, 37, 38, 39, 40]
        (new,) = await store.append([AssistantText(agent_id="a0000", ts=T0, text="after")])
        assert new.id == 41  # the sequence goes on past the copied ids
        verified = await store.verify_audit()
        assert verified.ok and verified.count == 5 and verified.head == report.audit.head
        memory = MemoryStore(store)
        assert [h.id for h in await memory.search("pytest")] == ["ob000000000001"]
        # A copied record's words in a path are words, as in records written there.
        assert [h.id for h in await memory.search("retry")] == ["ob000000000001"]
        await memory.add_observation(
            Observation(
                id="ob000000000002",
                project="/work/proj",
                session_id="s2",
                agent_id="a0000",
                ts=T0 + 5,
                tool="Bash",
                input_summary="Bash(make lint)",
                output_excerpt="clean",
            )
        )
        assert [h.id for h in await memory.search("lint")] == ["ob000000000002"]
    finally:
        await store.close()
    assert sorted(k[0] for k in rows(pg_url, memory_fts)) == [1, 2, 3]


def test_run_twice_it_copies_nothing_twice(home_db: Path, target: str) -> None:
    copy_database(home_db, target)
    again = copy_database(home_db, target)
    assert all(t.copied == 0 and t.present == t.total for t in again.tables)
    assert again.audit.ok and again.audit.count == 5
    assert counts(target) == counts(sqlite_url(home_db))


def test_the_copy_reads_one_snapshot_while_the_file_is_written(home_db: Path, target: str) -> None:
    def write_more(table: TableCopied) -> None:
        if table.table == "agents":  # events are copied later: these are after the snapshot
            conn = sqlite3.connect(home_db, timeout=30)
            with conn:
                conn.executemany(
                    "INSERT INTO events (agent_id, type, ts, data) VALUES ('a0000', 'x', 0, '{}')",
                    [()] * 5,
                )
            conn.close()

    report = {t.table: t for t in copy_database(home_db, target, on_table=write_more).tables}
    assert report["events"].total == 40 and counts(target)["events"] == 40
    assert counts(sqlite_url(home_db))["events"] == 45


@pytest.mark.anyio
async def test_rows_appended_since_the_last_copy_are_copied_by_the_next(
    home_db: Path, target: str
) -> None:
    copy_database(home_db, target)
    store = Store.open(home_db)
    try:
        await store.append([AssistantText(agent_id="a0000", ts=T0, text=f"n{i}") for i in range(5)])
    finally:
        await store.close()
    report = {t.table: t for t in copy_database(home_db, target).tables}
    assert (report["events"].copied, report["events"].present) == (5, 40)
    assert rows(target, events) == rows(sqlite_url(home_db), events)


def test_a_partial_copy_is_completed_without_duplicates(home_db: Path, target: str) -> None:
    copy_database(home_db, target)
    engine = sa.create_engine(target)
    try:
        with engine.begin() as conn:  # as if an earlier copy had stopped half-way
            conn.execute(sa.delete(events).where(events.c.id > 20))
            conn.execute(sa.delete(audit).where(audit.c.id > 2))
    finally:
        engine.dispose()
    report = {t.table: t for t in copy_database(home_db, target).tables}
    assert (report["events"].copied, report["events"].present) == (20, 20)
    assert (report["audit"].copied, report["audit"].present) == (3, 2)
    assert rows(target, events) == rows(sqlite_url(home_db), events)


def test_a_target_with_another_decks_data_is_refused_before_anything_is_written(
    tmp_path: Path, home_db: Path, target: str
) -> None:
    other = tmp_path / "other" / "agentdeck.db"
    fill_home(other, events=10, audit=3)
    conn = sqlite3.connect(other)
    with conn:  # another chain: same ids, other content
        conn.execute('UPDATE events SET data = \'{"text":"elsewhere"}\' WHERE id = 1')
    conn.close()
    copy_database(other, target)
    before = {p.name: rows(target, p.table) for p in plan()}
    with pytest.raises(
        StoreError, match=r"already holds other data: \w+ \S+ differs from this home's"
    ):
        copy_database(home_db, target)
    assert {p.name: rows(target, p.table) for p in plan()} == before


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ('UPDATE events SET data = \'{"text": "elsewhere"}\' WHERE id = 5', "events 5"),
        ("UPDATE audit SET hash = repeat('0', 64) WHERE id = 3", "audit 3"),
        ("UPDATE agents SET archived = true WHERE id = 'a0001'", "agents 'a0001'"),
        (
            "UPDATE usage_hours SET results = 99 WHERE hour = (SELECT min(hour) FROM usage_hours)",
            "usage_hours (",
        ),
    ],
)
def test_one_row_that_differs_refuses_the_copy_and_changes_nothing(
    home_db: Path, target: str, change: str, named: str
) -> None:
    copy_database(home_db, target)
    engine = sa.create_engine(target)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(change)
    finally:
        engine.dispose()
    before = {p.name: rows(target, p.table) for p in plan()}
    with pytest.raises(StoreError, match=re.escape(f"already holds other data: {named}")):
        copy_database(home_db, target)
    assert {p.name: rows(target, p.table) for p in plan()} == before


def test_a_row_the_home_lacks_is_refused_too(home_db: Path, target: str) -> None:
    engine = sa.create_engine(target)
    try:
        with engine.begin() as conn:
            conn.execute(sa.insert(events).values(id=999, agent_id="zz", type="x", ts=T0, data={}))
    finally:
        engine.dispose()
    with pytest.raises(StoreError, match="events holds 1 row this home does not have"):
        copy_database(home_db, target)
    assert counts(target)["events"] == 1


def test_a_row_postgresql_refuses_rolls_the_whole_copy_back(home_db: Path, target: str) -> None:
    conn = sqlite3.connect(home_db)
    with conn:  # SQLite's integers have 64 bits, PostgreSQL's INTEGER 32
        conn.execute("UPDATE notify_dead SET attempts = ?", (2**40,))
    conn.close()
    with pytest.raises(StoreError, match="PostgreSQL refused a row of notify_dead") as caught:
        copy_database(home_db, target)
    assert "nothing was written" in (caught.value.hint or "")
    assert set(counts(target).values()) == {0}


def test_what_the_model_wrote_goes_across_byte_for_byte(home_db: Path, target: str) -> None:
    hostile = "\\N\t\\.\n\\.\r\n'); DROP TABLE events; --\\\\ \u202e ✓ \U0001f600"
    conn = sqlite3.connect(home_db)
    with conn:  # COPY's own markers (\N is NULL, \. ends the data), quotes, escapes
        conn.execute("UPDATE events SET data = json_object('text', ?) WHERE id = 3", (hostile,))
        conn.execute("UPDATE agents SET last_error = ? WHERE id = 'a0001'", (hostile,))
        conn.execute("UPDATE agents SET last_error = ? WHERE id = 'a0002'", ("\\N",))
    conn.close()
    copy_database(home_db, target)
    assert rows(target, events)[(3,)]["data"] == {"text": hostile}
    agents_there = rows(target, agents)
    assert agents_there[("a0001",)]["last_error"] == hostile
    assert agents_there[("a0002",)]["last_error"] == "\\N"  # text, not NULL
    assert agents_there[("a0000",)]["last_error"] is None
    assert counts(target) == counts(sqlite_url(home_db))


def test_a_nul_character_is_kept_out_as_the_store_does_on_postgresql(
    home_db: Path, target: str
) -> None:
    conn = sqlite3.connect(home_db)
    with conn:  # a tool's output may hold NUL: text and jsonb cannot
        conn.execute("UPDATE notify_dead SET reason = ?", ("a\x00b",))
        conn.execute("UPDATE events SET data = ? WHERE id = 7", ('{"text":"x\\u0000y"}',))
    conn.close()
    report = {t.table: t for t in copy_database(home_db, target).tables}
    assert (report["notify_dead"].cleaned, report["events"].cleaned) == (1, 1)
    (letter,) = rows(target, notify_dead).values()
    assert letter["reason"] == "ab"
    assert rows(target, events)[(7,)]["data"] == {"text": "x\ufffdy"}
    again = copy_database(home_db, target)  # the same rows, compared the same way
    assert all(t.copied == 0 for t in again.tables)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite:///elsewhere.db", "--to: not a database URL agentdeck can use; accepted:"),
        ("mysql://u:pw@h/db", "--to: not a database URL agentdeck can use; accepted:"),
        ("postgresql+psycopg2://u@h/db", "--to: not a database URL agentdeck can use"),
        ("not a url", "--to: not a database URL agentdeck can use"),
        ("postgresql://u@h", "--to: the database URL names no database"),
        ("postgresql://u:pw@h:port/db", "--to: the database URL's port is not a number"),
    ],
)
def test_a_url_that_is_not_postgresql_is_refused(home_db: Path, url: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)) as caught:
        copy_database(home_db, url)
    assert "pw" not in str(caught.value)


def test_an_unreachable_server_is_one_error_without_the_password(home_db: Path) -> None:
    url = f"postgresql+psycopg://agentdeck:s3cret-pw@127.0.0.1:{_free_port()}/deck"
    with pytest.raises(
        StoreError, match="cannot reach postgresql\\+psycopg://agentdeck:\\*\\*\\*@"
    ):
        copy_database(home_db, url)
    with pytest.raises(StoreError) as caught:
        copy_database(home_db, url)
    assert "s3cret-pw" not in f"{caught.value.message} {caught.value.hint}"


def test_a_target_at_another_revision_is_refused(home_db: Path, target: str) -> None:
    engine = sa.create_engine(target)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0007'")
    finally:
        engine.dispose()
    with pytest.raises(StoreError, match="is at schema revision 0007"):
        copy_database(home_db, target)
    assert set(counts(target).values()) == {0}


def test_a_target_with_other_tables_is_refused(home_db: Path, pg_url: str) -> None:
    engine = sa.create_engine(pg_url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE theirs (id INTEGER PRIMARY KEY)")
    finally:
        engine.dispose()
    with pytest.raises(StoreError, match="is at schema revision none"):
        copy_database(home_db, pg_url)


def test_a_source_table_the_copier_does_not_know_is_refused(home_db: Path, target: str) -> None:
    conn = sqlite3.connect(home_db)
    with conn:
        conn.execute("CREATE TABLE extra (id INTEGER PRIMARY KEY)")
    conn.close()
    with pytest.raises(StoreError, match="holds tables this version cannot copy: extra"):
        copy_database(home_db, target)
    assert set(counts(target).values()) == {0}


def test_a_broken_audit_chain_is_not_copied(home_db: Path, target: str) -> None:
    conn = sqlite3.connect(home_db)
    with conn:
        conn.execute("UPDATE audit SET reason = 'rewritten' WHERE id = 3")
    conn.close()
    with pytest.raises(StoreError, match="audit log of .* is broken at entry 3"):
        copy_database(home_db, target)
    assert set(counts(target).values()) == {0}


def test_a_missing_empty_or_damaged_file_is_one_clear_error(tmp_path: Path, target: str) -> None:
    missing = tmp_path / "nowhere" / "agentdeck.db"
    with pytest.raises(StoreError, match="no database at .*nothing to copy"):
        copy_database(missing, target)
    assert not missing.parent.exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(StoreError, match="is empty: nothing to copy"):
        copy_database(empty, target)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all " * 500)
    with pytest.raises(StoreError, match="cannot read the database .*garbage.db"):
        copy_database(garbage, target)
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    with pytest.raises(StoreError, match="holds no agentdeck database"):
        copy_database(foreign, target)
    assert set(counts(target).values()) == {0}


def test_a_damaged_page_is_found_before_copying(tmp_path: Path, target: str) -> None:
    db = fill_home(tmp_path / "home" / "agentdeck.db", events=2000)
    data = bytearray(db.read_bytes())
    page = 4096
    for at in range(len(data) // 2, len(data) // 2 + 3 * page):
        data[at] = 0x5A
    db.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="damaged|cannot read the database"):
        copy_database(db, target)
    assert set(counts(target).values()) == {0}


def test_a_page_damaged_mid_copy_rolls_it_back_and_says_where(tmp_path: Path, target: str) -> None:
    db = fill_home(tmp_path / "home" / "agentdeck.db", events=30000)  # > the page cache

    def damage(table: TableCopied) -> None:
        if table.table == "agents":  # after the checks, before the events are read
            with db.open("r+b") as f:
                f.seek(db.stat().st_size // 2)
                f.write(b"\x5a" * 4096 * 8)

    with pytest.raises(StoreError, match=f"reading {re.escape(str(db))} failed") as caught:
        copy_database(db, target, on_table=damage)
    assert "nothing was written" in (caught.value.hint or "")
    assert set(counts(target).values()) == {0}


def test_the_source_file_is_not_written(home_db: Path, target: str) -> None:
    before = home_db.read_bytes()
    copy_database(home_db, target)
    assert home_db.read_bytes() == before
