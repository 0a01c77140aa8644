"""Doors of a deck on several machines (runner hosts) that what an agent or its row
may carry must not open: a transcript put back where a session id would lead out of
Claude Code's projects directory; labels that are not plain words."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState
from agentdeck.runner import transcripts
from agentdeck.settings import Settings
from agentdeck.store import Store
from agentdeck.store.transcripts import TranscriptStore
from agentdeck.web.schemas import AgentCreate

pytestmark = pytest.mark.anyio


def agent_with(session_id: str, cwd: Path) -> Agent:
    now = time.time()
    return Agent(
        id="a1hostdoor0001",
        name="door",
        state=AgentState.QUEUED,
        spec=AgentSpec(prompt="x"),
        cwd=str(cwd),
        created_at=now,
        updated_at=now,
        source=AgentSource.AGENTDECK,
        session_id=session_id,
    )


@pytest.mark.parametrize(
    "session_id",
    ["../../../escaped", "a/../../../escaped", "/abs/escaped", "x\nescaped", ".hidden"],
)
async def test_a_session_id_that_is_a_path_puts_nothing_anywhere(
    settings: Settings, tmp_path: Path, session_id: str
) -> None:
    settings.ensure_home()
    agent = agent_with(session_id, tmp_path / "work")
    async with Store.open(settings.db_path) as store:
        if session_id.isprintable():  # kept by a host (the store takes any printable id)
            await TranscriptStore(store).save(agent.id, session_id, "h1", '{"x": 1}\n')
        assert transcripts.path_of(settings, agent) is None
        assert await transcripts.restore(store, settings, agent) is False
        assert await transcripts.keep(store, settings, agent, "h1") is False
    assert not list(tmp_path.rglob("escaped*"))


def test_labels_an_agent_asks_for_are_plain_words() -> None:
    for bad in ["gpu\x1b[31m", "a b", "../x", "", "x" * 65]:
        with pytest.raises(ValueError):
            AgentCreate(prompt="p", labels=[bad])
    assert AgentCreate(prompt="p", labels=["gpu", "zone=eu"]).to_spec().labels == (
        "gpu",
        "zone=eu",
    )
