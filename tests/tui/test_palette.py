"""The deck's commands in the command palette, against a real daemon (``agentdeck
up``): an agent in a worktree on the real Claude Code CLI and the scripted model
edits a file and writes one; the palette shows its diff, rewinds it to a checkpoint,
starts an agent from a template and searches memory."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agentdeck.settings import Settings
from agentdeck.tui.app import DeckApp
from agentdeck.tui.link import HomeLocator
from agentdeck.tui.palette import Reading
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck_env
from tests.support.memory_records import seed_home
from tests.support.waiting import eventually
from tests.worktrees.conftest import make_repo
from tests.worktrees.test_agents import scenario

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


async def _true(value: Any) -> Any:
    return value


def reading(app: DeckApp) -> str:
    """The text of the Reading screen on top, as a terminal would show it."""
    screen = app.screen
    assert isinstance(screen, Reading)
    console = Console(width=100, file=io.StringIO(), color_system=None)
    console.print(screen.body)
    return console.file.getvalue()  # type: ignore[attr-defined]


def notices(app: DeckApp) -> list[str]:
    return [n.message for n in app._notifications]


async def palette(pilot: Any, text: str) -> None:
    """Open the palette, type ``text``, run the best hit: once it is a hit for the
    whole text (the list shows an earlier key's hits until the last search is done)."""
    await pilot.press("ctrl+p")
    await pilot.press(*text)
    app = pilot.app

    async def shown() -> bool:
        await pilot.pause()
        from textual.command import CommandList

        found = app.screen.query(CommandList)
        if not found or not found.first().option_count:
            return False
        return text in str(found.first().get_option_at_index(0).prompt)

    await eventually(shown, what=f"a palette hit for {text!r}")
    await pilot.press("enter")


async def test_diff_rewind_start_and_memory_from_the_palette(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    env = deck_env(tmp_path)
    seeded = await seed_home(Settings(home=Path(env["AGENTDECK_HOME"])), tmp_path / "mem")
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    repo = make_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    async with daemon.api() as api:
        created = await api.post(
            "/api/agents",
            json={
                "prompt": "fix add", "name": "fixer", "cwd": str(repo), "workspace": "worktree",
                "scenario": str(scenario(tmp_path, "fixer", "notes\n")), "keep_alive": False,
            },
        )  # fmt: skip
        assert created.status_code == 201, created.text
        fixer = created.json()

        async def finished() -> bool:
            state = (await api.get(f"/api/agents/{fixer['id']}")).json()["state"]
            return state in ("done", "idle")

        await eventually(finished, timeout=90, what="the fixer to finish")
        worktree = Path((await api.get(f"/api/agents/{fixer['id']}")).json()["cwd"])
        assert "a + b" in (worktree / "calc.py").read_text()

        app = DeckApp(HomeLocator(daemon.home))
        async with app.run_test(size=(100, 30)) as pilot:
            await eventually(lambda: _true(app.selected == fixer["id"]), what="it selected")

            # The diff of the selected agent's worktree, in a screen of its own.
            await palette(pilot, "diff of fixer")
            await eventually(lambda: _true(isinstance(app.screen, Reading)), what="the diff")
            body = reading(app)
            assert "calc.py" in body and "+1 -1" in body and "return a + b" in body
            assert "fixer.md" in body
            await pilot.press("escape")
            assert not isinstance(app.screen, Reading)

            # Rewind to the first checkpoint (before the Edit): asks first.
            await palette(pilot, "rewind fixer to checkpoint 1")
            await pilot.press("y")
            await eventually(
                lambda: _true(any("rewound fixer to checkpoint 1" in n for n in notices(app))),
                what="the rewind",
            )
            assert "a - b" in (worktree / "calc.py").read_text()
            assert not (worktree / "fixer.md").exists()

            # Start an agent from a (built-in) template, with its task typed in.
            await palette(pilot, "start an agent: reviewer")
            await pilot.press(*"look it over", "enter")
            await eventually(
                lambda: _true(any("started an agent from reviewer" in n for n in notices(app))),
                what="the start",
            )
            listed = (await api.get("/api/agents", params={"limit": 10})).json()["agents"]
            started = [a for a in listed if a["id"] != fixer["id"]]
            assert len(started) == 1 and started[0]["spec"]["prompt"] == "look it over"
            assert started[0]["spec"]["template"] == "reviewer"
            await api.post(f"/api/agents/{started[0]['id']}/kill", json={})

            # Search memory: the hits in a screen of their own.
            await palette(pilot, "search memory")
            await pilot.press(*"flaky", "enter")
            await eventually(lambda: _true(isinstance(app.screen, Reading)), what="the hits")
            body = reading(app)
            assert seeded.flaky.id in body or seeded.fixed.id in body
            await pilot.press("escape")
