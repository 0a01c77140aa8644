"""``agentdeck memory search / show / forget`` as a user runs them: real processes
on a real store, without a daemon and through one."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentdeck.settings import Settings
from agentdeck.web.schemas_memory import record_to_dict
from tests.support.deckcli import Done, deck, deck_argv, deck_env, spawn
from tests.support.memory_records import Seeded, seed_home
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio

DAEMON_START = 60.0  # seconds: a busy 2-core box


@pytest.fixture
async def seeded(settings: Settings, tmp_path: Path) -> Seeded:
    return await seed_home(settings, tmp_path / "work")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return deck_env(tmp_path)


def deck_in(cwd: Path, env: dict[str, str], *args: str) -> Done:
    proc = subprocess.run(
        deck_argv(*args), env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    return Done(proc.returncode, proc.stdout, proc.stderr)


def ids(done: Done) -> list[str]:
    assert done.code == 0, done.err
    return [h["id"] for h in done.json()]


async def test_search_lists_matches_as_a_table_and_as_json(
    seeded: Seeded, env: dict[str, str]
) -> None:
    table = deck(env, "memory", "search", "flaky")
    assert table.code == 0, table.err
    head, *rows = table.out.splitlines()
    assert head.split() == ["ID", "KIND", "AGE", "PROJECT", "TITLE", "SNIPPET"]
    assert {row.split()[0] for row in rows} == {seeded.flaky.id, seeded.fixed.id}
    row = next(r for r in rows if r.startswith(seeded.flaky.id))
    assert "observation" in row and "2h" in row and "proj-a" in row
    assert "Bash(pytest -x tests/test_retry.py)" in row
    assert "[" not in row.split("proj-a", 1)[1].replace("Bash(", "")  # marks are bold, not text

    found = deck(env, "memory", "search", "flaky", "--json")
    assert set(ids(found)) == {seeded.flaky.id, seeded.fixed.id}
    hit = next(h for h in found.json() if h["id"] == seeded.flaky.id)
    assert hit["kind"] == "observation" and hit["project"] == str(seeded.project_a)
    assert "[flaky]" in hit["snippet"]


async def test_project_takes_any_path_and_limit_bounds_the_results(
    seeded: Seeded, env: dict[str, str]
) -> None:
    # A relative path, resolved against where the command runs.
    found = deck_in(
        seeded.project_a, env, "memory", "search", "calc", "--project", "../proj-b", "--json"
    )
    assert ids(found) == [seeded.calc.id]
    elsewhere = deck_in(seeded.project_a, env, "memory", "search", "calc", "--project", ".")
    assert elsewhere.code == 0 and elsewhere.out.strip() == "no memory matches 'calc'"
    one = deck(env, "memory", "search", "flaky", "--limit", "1", "--json")
    assert len(ids(one)) == 1


async def test_text_that_looks_like_markup_or_syntax_is_just_words(
    seeded: Seeded, env: dict[str, str]
) -> None:
    for query in ("[/]", 'NEAR("flaky" AND', "[bold]flaky"):
        done = deck(env, "memory", "search", query)
        assert done.code == 0, done.err
        assert "Traceback" not in done.err
    assert deck(env, "memory", "search", "[/]").out.strip() == "no memory matches '[/]'"


async def test_show_prints_the_whole_record(seeded: Seeded, env: dict[str, str]) -> None:
    obs = deck(env, "memory", "show", seeded.flaky.id)
    assert obs.code == 0, obs.err
    assert obs.out.startswith(f"observation {seeded.flaky.id} (2h ago")
    assert f"project: {seeded.project_a}" in obs.out
    assert "tool call: Bash(pytest -x tests/test_retry.py) (error)" in obs.out
    assert seeded.flaky.output_excerpt in obs.out

    summary = deck(env, "memory", "show", seeded.fixed.id)
    assert summary.code == 0, summary.err
    assert "fix the flaky retry test" in summary.out
    assert seeded.fixed.final_message in summary.out
    assert "- pytest -x tests/test_retry.py" in summary.out

    as_json = deck(env, "memory", "show", seeded.calc.id, "--json")
    assert as_json.json() == record_to_dict(seeded.calc)


async def test_unknown_id_is_one_clear_line(seeded: Seeded, env: dict[str, str]) -> None:
    for args in (("show", "obnope"), ("show", "zz"), ("forget", "obnope")):
        done = deck(env, "memory", *args)
        assert done.code == 1, (args, done.out)
        assert "no memory record" in done.err and "Traceback" not in done.err
        assert len(done.err.strip().splitlines()) <= 2  # the error and its hint


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("ob0000000000a1", "--session", "sess-a"),
        ("--session", "sess-a", "--project", "."),
    ],
    ids=["none", "id-and-session", "session-and-project"],
)
async def test_forget_needs_exactly_one_selector_and_loses_nothing_otherwise(
    seeded: Seeded, env: dict[str, str], args: tuple[str, ...]
) -> None:
    done = deck(env, "memory", "forget", *args, "--yes")
    assert done.code == 2
    assert "exactly one of ID, --session or --project" in done.err
    assert len(done.err.strip().splitlines()) == 1
    assert len(ids(deck(env, "memory", "search", "flaky", "--json"))) == 2


async def test_forgetting_many_asks_for_yes_when_it_cannot_ask(
    seeded: Seeded, env: dict[str, str]
) -> None:
    done = deck(env, "memory", "forget", "--session", "sess-a")
    assert done.code == 2 and "needs --yes" in done.err
    assert len(ids(deck(env, "memory", "search", "flaky", "--json"))) == 2


async def test_forget_one_a_session_or_a_project(seeded: Seeded, env: dict[str, str]) -> None:
    one = deck(env, "memory", "forget", seeded.flaky.id)
    assert (one.code, one.out.strip()) == (0, "forgot 1 record")
    assert ids(deck(env, "memory", "search", "flaky", "--json")) == [seeded.fixed.id]

    session = deck(env, "memory", "forget", "--session", "sess-a", "--yes", "--json")
    assert session.code == 0, session.err
    assert session.json() == {"forgotten": 1}
    assert ids(deck(env, "memory", "search", "flaky", "--json")) == []

    project = deck_in(seeded.project_a, env, "memory", "forget", "--project", "../proj-b", "-y")
    assert (project.code, project.out.strip()) == (0, "forgot 1 record")
    assert ids(deck(env, "memory", "search", "calc", "--json")) == []
    nothing = deck(env, "memory", "forget", "--session", "sess-a", "--yes")
    assert (nothing.code, nothing.out.strip()) == (0, "forgot 0 records")


@pytest.fixture
async def daemon(env: dict[str, str], seeded: Seeded) -> AsyncIterator[dict[str, object]]:
    home = Path(env["AGENTDECK_HOME"])
    proc = spawn(env, "up")

    async def ready() -> dict[str, object] | None:
        if proc.poll() is not None:
            raise AssertionError(f"daemon exited: {proc.communicate()}")
        try:
            info: dict[str, object] = json.loads((home / "daemon.json").read_text())
        except (OSError, ValueError):
            return None
        return info if info["pid"] == proc.pid else None

    try:
        yield await eventually(ready, timeout=DAEMON_START, what="the daemon")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


async def test_through_a_running_daemon(
    seeded: Seeded, env: dict[str, str], daemon: dict[str, object]
) -> None:
    status = deck(env, "status", "--json")
    assert status.json()["running"] is True  # so the commands below use its API

    assert set(ids(deck(env, "memory", "search", "flaky", "--json"))) == {
        seeded.flaky.id,
        seeded.fixed.id,
    }
    table = deck(env, "memory", "search", "flaky")
    assert table.code == 0 and seeded.flaky.id in table.out
    assert deck(env, "memory", "show", seeded.calc.id, "--json").json() == record_to_dict(
        seeded.calc
    )
    shown = deck(env, "memory", "show", seeded.fixed.id)
    assert seeded.fixed.final_message in shown.out

    missing = deck(env, "memory", "show", "obnope")
    assert missing.code == 1 and "no memory record" in missing.err

    assert deck(env, "memory", "forget", seeded.flaky.id).out.strip() == "forgot 1 record"
    forgot = deck_in(seeded.project_b, env, "memory", "forget", "--project", ".", "--yes", "--json")
    assert forgot.json() == {"forgotten": 1}
    assert ids(deck(env, "memory", "search", "flaky calc", "--json")) == [seeded.fixed.id]
