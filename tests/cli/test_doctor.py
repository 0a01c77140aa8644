"""``agentdeck doctor``: every check on a healthy fresh home passes (warnings aside),
and each problem fails with its fix: an endpoint that cannot be reached, a damaged
database, a database from a newer agentdeck; a running daemon is found and asked."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentdeck.settings import Settings
from tests.support.deckcli import Done, deck, deck_env
from tests.support.mockmodel import running_mock
from tests.support.served import serving

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


async def doctor(env: dict[str, str]) -> tuple[Done, dict[str, dict[str, str]]]:
    done = await asyncio.to_thread(deck, env, "doctor", "--json")
    return done, {c["name"]: c for c in json.loads(done.out)["checks"]}


@pytest.fixture
def closed_port() -> Iterator[Callable[[], int]]:
    """Ports that refuse connections until the test ends: bound, never listened on,
    so no other process (another test worker) can take one meanwhile."""
    held: list[socket.socket] = []

    def pick() -> int:
        s = socket.socket()
        held.append(s)
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

    yield pick
    for s in held:
        s.close()


async def test_a_healthy_home_passes_and_each_problem_fails_with_its_fix(
    settings: Settings, tmp_path: Path, closed_port: Callable[[], int]
) -> None:
    async with running_mock("chat") as model:
        env = deck_env(tmp_path, ANTHROPIC_BASE_URL=model.url_for("chat"),
                       ANTHROPIC_API_KEY="sk-test")  # fmt: skip
        done, found = await doctor(env)
        assert done.code == 0, done.out
        assert set(found) == {
            "claude", "model", "home", "database", "daemon", "hooks", "sandbox", "disk",
        }  # fmt: skip
        assert found["claude"]["status"] == "ok" and "Claude Code" in found["claude"]["detail"]
        assert found["model"]["status"] == "ok" and "ANTHROPIC_API_KEY" in found["model"]["detail"]
        assert found["home"]["status"] == "ok"  # made private
        assert (tmp_path / "home").stat().st_mode & 0o077 == 0
        assert found["hooks"]["status"] == "warn" and found["hooks"]["fix"]
        async with serving(settings):
            _, running = await doctor(env)
        assert running["daemon"]["status"] == "ok" and "answers" in running["daemon"]["detail"]
        assert running["database"]["status"] == "ok" and "intact" in running["database"]["detail"]

    unreachable = deck_env(tmp_path, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{closed_port()}")
    db = Path(unreachable["AGENTDECK_HOME"]) / "agentdeck.db"
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    done, found = await doctor(unreachable)
    assert done.code == 1
    assert found["model"]["status"] == "fail" and "cannot be reached" in found["model"]["detail"]
    assert found["database"]["status"] == "fail" and found["database"]["fix"] == "upgrade agentdeck"
    db.write_bytes(b"this is not a database" * 100)
    _, found = await doctor(unreachable)
    assert found["database"]["status"] == "fail" and found["database"]["fix"]
    text = await asyncio.to_thread(deck, unreachable, "doctor")
    assert text.code == 1 and "fail  model:" in text.out and "fix: " in text.out


class _Endpoint(http.server.BaseHTTPRequestHandler):
    """A model endpoint that answers ``codes`` in turn (the last one from then on)."""

    codes: list[int] = []
    seen: list[str] = []
    keys: list[str | None] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.path)
        type(self).keys.append(self.headers.get("x-api-key"))
        code = self.codes.pop(0) if len(self.codes) > 1 else self.codes[0]
        body = json.dumps({"data": []} if code == 200 else {"error": "busy"}).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@contextlib.contextmanager
def endpoint(*codes: int, keys: list[str | None] | None = None) -> Iterator[str]:
    """``keys``, if given, gets the ``x-api-key`` of each request."""
    handler = type(
        "Handler",
        (_Endpoint,),
        {"codes": list(codes), "seen": [], "keys": [] if keys is None else keys},
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def test_a_rate_limited_endpoint_is_tried_again_and_a_failing_one_fails(
    tmp_path: Path,
) -> None:
    with endpoint(429, 503, 200) as url:
        _, found = await doctor(deck_env(tmp_path, ANTHROPIC_BASE_URL=url))
    assert found["model"]["status"] == "ok"  # the third try answered
    with endpoint(500) as url:
        done, found = await doctor(deck_env(tmp_path, ANTHROPIC_BASE_URL=url))
    assert done.code == 1 and found["model"]["status"] == "fail"
    assert "answers 500 after 3 tries" in found["model"]["detail"]
    with endpoint(401) as url:
        _, found = await doctor(deck_env(tmp_path, ANTHROPIC_BASE_URL=url))
    assert "refuses the credentials (401)" in found["model"]["detail"]


async def test_the_model_settings_are_read_by_their_agentdeck_names_too(tmp_path: Path) -> None:
    keys: list[str | None] = []
    with endpoint(200, keys=keys) as url:
        env = deck_env(tmp_path, AGENTDECK_ANTHROPIC_BASE_URL=url,
                       AGENTDECK_ANTHROPIC_API_KEY="sk-agentdeck-alias")  # fmt: skip
        _, found = await doctor(env)
    assert found["model"]["status"] == "ok", found["model"]
    assert url in found["model"]["detail"] and "ANTHROPIC_API_KEY" in found["model"]["detail"]
    assert keys == ["sk-agentdeck-alias"]
    assert "sk-agentdeck-alias" not in json.dumps(found)


async def test_a_daemon_that_holds_the_home_but_does_not_answer_fails(
    tmp_path: Path, closed_port: Callable[[], int]
) -> None:
    env = deck_env(tmp_path, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{closed_port()}")
    home = Path(env["AGENTDECK_HOME"])
    home.mkdir(parents=True)
    info = {"pid": os.getpid(), "host": "127.0.0.1", "port": closed_port(), "started_at": 1.0}
    (home / "daemon.json").write_text(json.dumps(info))  # a live pid, a port nobody serves
    done, found = await doctor(env)
    assert done.code == 1 and found["daemon"]["status"] == "fail"
    assert "does not answer" in found["daemon"]["detail"] and found["daemon"]["fix"]


async def test_a_postgresql_store_is_checked_there_and_its_password_never_shown(
    tmp_path: Path, pg_url: str, closed_port: Callable[[], int]
) -> None:
    """With AGENTDECK_DATABASE_URL the database check asks PostgreSQL (it named the
    home's SQLite file): empty, then at head once a store opened it; unreachable
    fails with its fix; the URL is shown without its password."""
    env = deck_env(tmp_path, AGENTDECK_DATABASE_URL=pg_url)
    _, checks = await doctor(env)
    assert checks["database"]["status"] == "warn", checks["database"]
    assert "empty" in checks["database"]["detail"] and "agentdeck.db" not in str(checks)

    from agentdeck.store import Store

    async with Store.open(pg_url):
        pass
    _, checks = await doctor(env)
    assert checks["database"]["status"] == "ok", checks["database"]
    assert "reachable, schema" in checks["database"]["detail"]

    hidden = f"postgresql://agentdeck:pw-secret@127.0.0.1:{closed_port()}/deck"
    done, checks = await doctor(deck_env(tmp_path, AGENTDECK_DATABASE_URL=hidden))
    assert done.code == 1
    assert checks["database"]["status"] == "fail", checks["database"]
    assert "cannot be reached" in checks["database"]["detail"]
    assert "pw-secret" not in done.out + done.err
