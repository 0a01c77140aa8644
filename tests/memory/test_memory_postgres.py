"""``agentdeck memory`` of a home whose database is PostgreSQL
(``AGENTDECK_DATABASE_URL``): real processes, the same records written to a
SQLite home and to a PostgreSQL one, the same answers from both."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agentdeck.store import Store
from agentdeck.store.memory import MemoryStore
from agentdeck.web.schemas_memory import record_to_dict
from tests.support.deckcli import deck, deck_env
from tests.support.memory_records import Seeded, records, write

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def homes(tmp_path: Path, pg_url: str) -> tuple[Seeded, dict[str, str], dict[str, str]]:
    """The seeded records in a SQLite home and in a PostgreSQL one; each home's env."""
    seeded = records(tmp_path / "work")
    on_sqlite = deck_env(tmp_path / "sqlite")
    on_postgres = deck_env(tmp_path / "postgres", AGENTDECK_DATABASE_URL=pg_url)
    for target in (Path(on_sqlite["AGENTDECK_HOME"]) / "agentdeck.db", pg_url):
        store = Store.open(target)
        try:
            await write(MemoryStore(store), seeded)
        finally:
            await store.close()
    return seeded, on_sqlite, on_postgres


def marked(snippet: str) -> set[str]:
    return set(re.findall(r"\[([^\]]+)\]", snippet))


def found(env: dict[str, str], *args: str) -> list[dict[str, Any]]:
    done = deck(env, "memory", "search", *args, "--json")
    assert done.code == 0, done.err
    hits: list[dict[str, Any]] = done.json()
    return hits


async def test_search_answers_as_on_sqlite(
    homes: tuple[Seeded, dict[str, str], dict[str, str]],
) -> None:
    seeded, on_sqlite, on_postgres = homes
    for args in (
        ("flaky",),
        ("flaky timeout",),
        ("backo*",),
        ("calc",),
        ("retry", "--project", str(seeded.project_a)),
        ("flaky & !timeout | (calc):*",),  # tsquery's syntax is words here too
    ):
        sqlite_hits, postgres_hits = found(on_sqlite, *args), found(on_postgres, *args)
        # The same hits. Their order where they are close may differ: bm25 (SQLite,
        # for rare words) weighs a record's length, ts_rank does not ("backo*"
        # is in a short observation's body and a long summary's: the summary's
        # boost wins on PostgreSQL only). Clear orders are the same (below).
        assert sorted(h["id"] for h in postgres_hits) == sorted(h["id"] for h in sqlite_hits)
        twins = {h["id"]: h for h in sqlite_hits}
        for hit in postgres_hits:
            twin = twins[hit["id"]]
            assert {k: v for k, v in hit.items() if k not in ("score", "snippet")} == {
                k: v for k, v in twin.items() if k not in ("score", "snippet")
            }
            # Which words are marked is the same; which few words around them
            # are shown is each engine's choice (FTS5's snippet(), ts_headline).
            assert marked(hit["snippet"]) == marked(twin["snippet"]), (hit, twin)
    for env in (on_sqlite, on_postgres):  # in the summary's title: first
        assert [h["id"] for h in found(env, "flaky")] == [seeded.fixed.id, seeded.flaky.id]


async def test_show_and_forget_on_postgres(
    homes: tuple[Seeded, dict[str, str], dict[str, str]],
) -> None:
    seeded, _, on_postgres = homes
    shown = deck(on_postgres, "memory", "show", seeded.calc.id, "--json")
    assert shown.code == 0, shown.err
    assert shown.json() == record_to_dict(seeded.calc)
    gone = deck(on_postgres, "memory", "forget", seeded.flaky.id)
    assert (gone.code, gone.out.strip()) == (0, "forgot 1 record"), gone.err
    assert [h["id"] for h in found(on_postgres, "flaky")] == [seeded.fixed.id]
    assert "postgresql" not in gone.err and "Traceback" not in gone.err
