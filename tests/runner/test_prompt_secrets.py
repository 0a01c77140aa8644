"""The prompt as typed is stored and shown scrubbed; the model gets it whole.

A first prompt holding a key, on the real Claude Code CLI and the scripted model:
the agents table, ``GET /api/agents/ID`` and the agent's name hold the redacted
copy; the model answers the key it was given. A relaunch (an agent stopped before
its Claude session began) by the process that started it gives the real prompt
again; by any other process (a daemon restarted since) it is refused, said in the
agent's last error, never sent redacted.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
import yaml

from agentdeck.core.agent import PROMPT_REDACTED, AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.daemon.compose import build_runner
from agentdeck.errors import SecretNotKept
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.support.served import serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

KEY = "ghp_" + "Q7vLm2Xk9Rt4Wc8Zp1Hs6Nd3Bf5Gj0Ya2Ue"
PROMPT = f"deploy with the token {KEY} please"
GOT = "GOT-THE-WHOLE-KEY"


def _scenario(tmp_path: Path) -> str:
    path = tmp_path / "key.yaml"
    turn = {"when": {"user_text_contains": KEY}, "reply": [{"text": GOT}]}
    path.write_text(yaml.safe_dump({"name": "key", "turns": [turn]}))
    return str(path)


async def _texts(store: Store, agent_id: str) -> list[str]:
    events = await store.read(agent_id=agent_id)
    return [str(e.data.get("text")) for e in events if e.type == EventType.ASSISTANT_TEXT]


def _raw_rows(settings: Settings) -> str:
    with contextlib.closing(sqlite3.connect(settings.db_path)) as db:
        return "\n".join(str(row) for row in db.execute("SELECT * FROM agents"))


async def test_the_prompt_is_stored_redacted_and_the_model_gets_it_whole(
    settings: Settings, tmp_path: Path
) -> None:
    spec = AgentSpec(prompt=PROMPT, scenario=_scenario(tmp_path))
    async with serving(settings) as served:
        agent = await served.deck.create_agent(spec)
        store = served.deck._store

        async def answered() -> list[str] | None:
            return [t for t in await _texts(store, agent.id) if GOT in t] or None

        await eventually(answered, timeout=90, what="the model's answer to the key")
        async with served.api() as api:
            shown = (await api.get(f"/api/agents/{agent.id}")).json()
        rows = _raw_rows(settings)
    assert KEY not in str(agent.to_dict())
    assert KEY not in str(shown) and "[REDACTED:" in shown["spec"]["prompt"]
    assert shown["spec"]["prompt"].startswith("deploy with the token ")
    assert shown["extra"][PROMPT_REDACTED] is True
    assert KEY not in rows and "[REDACTED:" in rows
    assert KEY[4:] not in shown["name"]


async def test_a_relaunch_gives_the_real_prompt_here_and_is_refused_elsewhere(
    settings: Settings, tmp_path: Path
) -> None:
    settings.ensure_home()
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    other = build_runner(store, settings)  # as a daemon started since would be
    try:
        session = await runner.start(AgentSpec(prompt=PROMPT, scenario=_scenario(tmp_path)))
        await session.wait_finished(timeout=90)
        agent_id = session.agent.id
        assert [t for t in await _texts(store, agent_id) if GOT in t]
        # As if it had been stopped before its Claude session began.
        stopped = (await store.get_agent(agent_id)).with_changes(
            session_id=None, state=AgentState.INTERRUPTED
        )
        await store.save_agent(stopped)

        with pytest.raises(SecretNotKept) as refused:
            await other.relaunch(agent_id)
        assert "held a secret" in refused.value.message and refused.value.hint
        after = await store.get_agent(agent_id)
        assert after.last_error is not None and "held a secret" in after.last_error
        assert after.state == AgentState.INTERRUPTED and not other.sessions

        again = await runner.relaunch(agent_id)
        await again.wait_finished(timeout=90)
        assert len([t for t in await _texts(store, agent_id) if GOT in t]) == 2
        assert KEY not in _raw_rows(settings)
    finally:
        try:
            await runner.shutdown()
            await other.shutdown()
        finally:
            await store.close()
