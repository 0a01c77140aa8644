"""The runner host an agent runs on, in ``agentdeck ls`` (a HOST column only on a
deck where some agent has a host, ``--tree`` too) and ``agentdeck show`` (its host
and lease lines; ``--json`` has them in ``extra``); a ``queued`` agent is listed
and filtered as such. The real CLI on a real home."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.settings import Settings
from agentdeck.store import Store
from tests.support.deckcli import deck, deck_env

pytestmark = pytest.mark.anyio


async def seed(
    settings: Settings, tmp_path: Path, agents: list[tuple[str, AgentState, dict[str, object]]]
) -> None:
    settings.ensure_home()
    now = time.time()
    async with Store.open(settings.db_path) as store:
        for i, (name, state, extra) in enumerate(agents):
            await store.save_agent(
                Agent(
                    id=f"agent000{name:0>8}", name=name, state=state, spec=AgentSpec(prompt="p"),
                    cwd=str(tmp_path), created_at=now + i, updated_at=now + i, extra=extra,
                )
            )  # fmt: skip


def header(out: str) -> list[str]:
    return next(line for line in out.splitlines() if line.startswith("ID")).split()


def line_of(out: str, word: str) -> str:
    return next(line for line in out.splitlines() if word in line)


def fact(out: str, key: str) -> list[str]:
    """``show``'s line for ``key``: its words."""
    return next(line.split() for line in out.splitlines() if line.split()[:1] == [key])


async def test_ls_and_show_name_the_host_that_runs_an_agent(
    settings: Settings, tmp_path: Path
) -> None:
    await seed(
        settings, tmp_path,
        [
            ("onhost", AgentState.DONE, {"host": "builder-2", "lease": 7}),
            ("waiting", AgentState.QUEUED, {}),
            ("local", AgentState.DONE, {}),
        ],
    )  # fmt: skip
    env = deck_env(tmp_path)
    table = deck(env, "ls")
    assert table.code == 0, table.err
    assert header(table.out) == [
        "ID", "NAME", "STATE", "HOST", "TOOL", "TURNS", "COST", "AGE"
    ]  # fmt: skip
    assert line_of(table.out, "onhost").split()[3] == "builder-2"
    assert "builder-2" not in line_of(table.out, "local")
    assert "queued" in line_of(table.out, "waiting")
    tree = deck(env, "ls", "--tree")
    assert "HOST" in header(tree.out) and "builder-2" in line_of(tree.out, "onhost")
    queued = deck(env, "ls", "--state", "queued", "--json").json()
    assert [a["name"] for a in queued] == ["waiting"]

    shown = deck(env, "show", "onhost")
    assert shown.code == 0, shown.err
    assert fact(shown.out, "host") == ["host", "builder-2"]
    assert fact(shown.out, "lease") == ["lease", "7"]
    as_json = deck(env, "show", "onhost", "--json").json()
    assert as_json["extra"]["host"] == "builder-2" and as_json["extra"]["lease"] == 7
    local = deck(env, "show", "local").out
    assert not any(line.split()[:1] in (["host"], ["lease"]) for line in local.splitlines())


async def test_ls_has_no_host_column_on_a_deck_without_hosts(
    settings: Settings, tmp_path: Path
) -> None:
    await seed(settings, tmp_path, [("alone", AgentState.DONE, {})])
    table = deck(deck_env(tmp_path), "ls")
    assert table.code == 0, table.err
    assert header(table.out) == ["ID", "NAME", "STATE", "TOOL", "TURNS", "COST", "AGE"]
