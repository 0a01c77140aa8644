"""``agentdeck db migrate --to URL``, run as a user would (a real subprocess) into a
real PostgreSQL: what it says, ``--json``, the password never shown, a running
daemon refused, bad input one clear line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import sqlalchemy as sa

from agentdeck.store.schema import events
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_argv, deck_env
from tests.support.decks_to_copy import fill_home, prepare_pg
from tests.support.pgcluster import _free_port

pytestmark = pytest.mark.cli


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    fill_home(tmp_path / "home" / "agentdeck.db")
    return deck_env(tmp_path)


def with_password(url: str, password: str) -> str:
    """The same database with a password in the URL (trust auth ignores it)."""
    return url.replace("agentdeck@", f"agentdeck:{password}@", 1)


def event_count(url: str) -> int:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one())
    finally:
        engine.dispose()


def test_it_copies_says_what_it_did_and_never_shows_the_password(
    env: dict[str, str], pg_url: str
) -> None:
    prepare_pg(pg_url)
    url = with_password(pg_url, "hunter2-secret")
    done = deck(env, "db", "migrate", "--to", url)
    assert done.code == 0, done.err
    assert "hunter2-secret" not in done.out + done.err
    lines = done.out.splitlines()
    assert lines[0].startswith("copying ") and lines[0].endswith(
        f" into {pg_url.replace('agentdeck@', 'agentdeck:***@')}"
    )
    assert any(line.split()[:3] == ["events", "copied", "40"] for line in lines), done.out
    assert "audit chain verified in the target: 5 entries" in done.out
    assert "agentdeck:***@127.0.0.1" in done.out
    assert "every table's count equals the source's" in done.out
    assert event_count(pg_url) == 40

    again = deck(env, "db", "migrate", "--to", url, "--json")
    assert again.code == 0, again.err
    report = again.json()
    assert "hunter2-secret" not in again.out
    assert report["copied"] == 0 and report["audit"]["ok"] is True
    assert all(t["present"] == t["total"] for t in report["tables"])
    assert {t["table"] for t in report["tables"]} >= {"events", "audit", "agents", "memory_fts"}
    assert event_count(pg_url) == 40


def test_the_url_can_come_on_stdin(env: dict[str, str], pg_url: str) -> None:
    prepare_pg(pg_url)
    proc = subprocess.run(
        deck_argv("db", "migrate", "--to", "-", "--json"),
        env=env,
        input=with_password(pg_url, "from-stdin") + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "from-stdin" not in proc.stdout + proc.stderr
    assert event_count(pg_url) == 40


def test_without_to_it_copies_into_the_configured_database(
    env: dict[str, str], pg_url: str
) -> None:
    url = with_password(pg_url, "from-settings")
    done = deck({**env, "AGENTDECK_DATABASE_URL": url}, "db", "migrate", "--json")
    assert done.code == 0, done.err
    assert "from-settings" not in done.out + done.err
    assert done.json()["created_schema"] is True
    assert event_count(pg_url) == 40
    nowhere = deck(env, "db", "migrate")
    assert nowhere.code == 2
    assert nowhere.err.startswith("error: say which PostgreSQL database to copy into")


@pytest.mark.anyio
async def test_it_refuses_while_a_daemon_runs_for_the_home(
    env: dict[str, str], pg_url: str, daemons: list[Daemon]
) -> None:
    prepare_pg(pg_url)
    daemons.append(await Daemon(env).start())
    done = deck(env, "db", "migrate", "--to", pg_url)
    assert done.code == 2
    assert done.err.splitlines()[0].startswith("error: a daemon runs for "), done.err
    assert "agentdeck down" in done.err
    assert event_count(pg_url) == 0


@pytest.mark.parametrize(
    ("to", "code", "message"),
    [  # ids without the free port: each xdist worker must collect the same test ids
        ("mysql://u:pw-secret@h/db", 2, "error: --to: not a database URL agentdeck can use"),
        ("nonsense", 2, "error: --to: not a database URL agentdeck can use"),
        (
            f"postgresql://agentdeck:pw-secret@127.0.0.1:{_free_port()}/deck",
            1,
            "error: cannot reach postgresql+psycopg://agentdeck:***@127.0.0.1:",
        ),
    ],
    ids=["mysql", "not-a-url", "unreachable"],
)
def test_bad_input_is_one_clear_line(env: dict[str, str], to: str, code: int, message: str) -> None:
    done = deck(env, "db", "migrate", "--to", to)
    assert done.code == code, done
    assert done.err.startswith(message), done.err
    assert len(done.err.strip().splitlines()) <= 2  # the error and its hint
    assert "pw-secret" not in done.err + done.out
    assert "Traceback" not in done.err


def test_a_home_without_a_database_is_one_clear_line(tmp_path: Path, pg_url: str) -> None:
    prepare_pg(pg_url)
    done = deck(deck_env(tmp_path), "db", "migrate", "--to", pg_url)
    assert done.code == 1
    assert done.err.startswith("error: no database at "), done.err
    assert not (tmp_path / "home" / "agentdeck.db").exists()
