"""A merge's target branch, as any caller names it (the API, RemoteDeck, the CLI's
``--into``), never reaches git as an option or a ref expression: a name git would
refuse or read otherwise is a usage error before the agent is even looked up, so
nothing is queued and no git runs. (The model's own ``merge_agent`` names no target
at all; this is the door for every other caller.)"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentdeck.core.worktree import branch_problem
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.deck import Deck
from agentdeck.errors import NotFound, UsageError
from tests.conftest import make_settings
from tests.contract.test_deck_changes import HOSTILE_BRANCHES

pytestmark = pytest.mark.anyio


@pytest.fixture
async def deck(tmp_path: Path) -> AsyncIterator[Deck]:
    opened = await open_deck(make_settings(tmp_path), embedded=True)
    try:
        yield opened
    finally:
        await opened.close()


async def test_a_hostile_target_is_refused_before_anything(deck: Deck, tmp_path: Path) -> None:
    for into in HOSTILE_BRANCHES:
        with pytest.raises(UsageError):  # not NotFound: refused before the look-up
            await deck.merge("no-such-agent", into=into)
    with pytest.raises(UsageError):
        await deck.merge("no-such-agent", test="true\x00touch pwned")
    with pytest.raises(NotFound):  # a plain name goes on to the look-up
        await deck.merge("no-such-agent", into="main")
    assert await deck.merges() == []
    assert not Path("/tmp/pwned").exists()


def test_what_the_check_lets_through_git_takes_as_a_branch(tmp_path: Path) -> None:
    for name in (*HOSTILE_BRANCHES, "main", "feature/x", "agentdeck/a1-b2", "v1.2"):
        if "\x00" in name:
            assert branch_problem(name) is not None
            continue
        git = subprocess.run(
            ["git", "check-ref-format", "--branch", name], capture_output=True, cwd=tmp_path
        )
        if branch_problem(name) is None:
            assert git.returncode == 0, name
