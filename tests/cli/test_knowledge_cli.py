"""``agents list/show``, ``memory show/forget``, ``budgets ls/set/rm`` and ``policy
profiles`` have one code path, on the deck ``cli.decks`` gives them: through a
running daemon they go over its API (this process opens no store) and print the
same bytes as without one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_quick import loaded_modules
from tests.support.daemonproc import Daemon
from tests.support.deckcli import Done, deck, deck_env

pytestmark = [pytest.mark.cli, pytest.mark.anyio]

STORE = "agentdeck.store.store"


def commands(project: Path) -> list[tuple[str, ...]]:
    return [
        ("budgets", "ls"),
        ("budgets", "set", "--user", "ann", "2.5"),
        ("budgets", "set", "--project", str(project), "1"),
        ("budgets", "ls"),
        ("budgets", "ls", "--json"),
        ("budgets", "rm", "--user", "ann"),
        ("budgets", "rm", "--user", "ann"),  # no budget now: one clear line, exit 1
        ("budgets", "set", "--user", "ann", "--", "-1"),
        ("agents", "list", "--project", str(project)),
        ("agents", "list", "--project", str(project), "--json"),
        ("agents", "show", "auditor", "--project", str(project)),
        ("agents", "show", "no-such", "--project", str(project)),
        ("memory", "show", "obnope"),
        ("memory", "forget", "obnope"),
        ("memory", "forget", "--session", "no-such-session", "--yes"),
        ("policy", "profiles"),
    ]


def write_template(project: Path) -> None:
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "auditor.md").write_text(
        "---\nname: auditor\ndescription: audits\ntools: Read\n---\nAUDIT prompt\n"
    )
    (agents / "broken.md").write_text("---\nname: Broken_Name\n---\nx\n")


async def test_through_a_daemon_the_same_bytes_and_no_store_opened(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    project = tmp_path / "project"
    write_template(project)
    alone = deck_env(tmp_path / "alone")
    served = deck_env(tmp_path / "served")
    daemons.append(await Daemon(served).start())

    for args in commands(project):
        here: Done = deck(alone, *args)
        there: Done = deck(served, *args)
        assert (there.code, there.out, there.err) == (here.code, here.out, here.err), args
        assert "Traceback" not in here.err, (args, here.err)
    assert deck(served, "budgets", "ls", "--json").json() == [
        {"scope": "project", "name": str(project), "daily_usd": 1.0, "spent_today_usd": 0.0}
    ]
    for args in (("budgets", "ls"), ("agents", "list"), ("memory", "show", "obnope")):
        _, modules, _ = loaded_modules(served, *args)
        assert STORE not in modules, args  # asked the daemon
        _, modules, _ = loaded_modules(alone, *args)
        assert STORE in modules, args  # the deck opened here
