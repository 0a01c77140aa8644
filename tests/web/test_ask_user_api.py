"""AskUserQuestion through the API: the ask shows its questions apart from its
text, takes a structured answer (bad ones a 400 that answers nothing), and the
model gets the chosen options — a real daemon, the real Claude Code CLI and the
scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from agentdeck.client.deck import RemoteDeck
from agentdeck.core.agent import AgentSpec
from agentdeck.core.asks import AskState
from agentdeck.orchestration import person_asks
from tests.support.waiting import eventually

from .conftest import RunningDaemon

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

SCENARIO = str(Path(__file__).resolve().parents[1] / "asks" / "scenarios" / "ask-user-loop.yaml")


async def test_a_structured_answer_reaches_the_model(
    daemon: RunningDaemon, api: httpx.AsyncClient
) -> None:
    agent = await daemon.deck.create_agent(AgentSpec(prompt="start", scenario=SCENARIO))

    async def pending() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await api.get("/api/asks")).json()["asks"]
        return found

    (ask,) = await eventually(pending, timeout=90, what="the question")
    assert (await api.get("/api/approvals")).json()["approvals"] == []
    assert [q["header"] for q in ask["questions"]] == ["Database", "Scope"]
    assert "[agentdeck:choices" not in ask["text"]
    one = (await api.get(f"/api/asks/{ask['id']}")).json()
    assert one["questions"] == ask["questions"]

    # The one client reads the same record back, options and all.
    async with RemoteDeck.connect(daemon.url, daemon.token, client="cli") as remote:
        (seen,) = await remote.asks(states=[AskState.PENDING])
        assert [o.label for o in seen.questions[1].options] == ["Auth", "Search"]
        assert seen.questions[1].multi_select is True

    for bad, said in [
        ({"answers": {"1": "SQLite"}}, "question 2 has no answer"),
        ({"answers": {"1": 3, "2": ["Auth"]}}, "no option 3"),
        ({"answers": {"1": ["SQLite", "PostgreSQL"], "2": "1"}}, "takes one option"),
        ({"answer": "1=SQLite;2=7"}, "no option 7"),
        ({"answer": "SQLite", "answers": {"1": "SQLite"}}, "either answer or answers"),
        ({}, "either answer or answers"),
    ]:
        refused = await api.post(f"/api/asks/{ask['id']}", json=bad)
        assert refused.status_code in (400, 422), (bad, refused.text)
        assert said in refused.text, (bad, refused.text)
    assert (await api.get(f"/api/asks/{ask['id']}")).json()["state"] == "pending"

    done = await api.post(
        f"/api/asks/{ask['id']}", json={"answers": {"Database": "SQLite", "2": ["Auth", 2]}}
    )
    assert done.status_code == 200, done.text
    assert done.json()["answer"] == "1=SQLite\n2=Auth, Search"
    assert done.json()["answered_by"].startswith("user:")

    async def said() -> str | None:
        current = await daemon.deck.get_agent(agent.id)
        result = current.extra.get("last_result")
        return str(result) if result else None

    assert await eventually(said, timeout=90, what="the model's reply") == "API-SQLITE-AUTH-SEARCH"


ONE = str(Path(__file__).resolve().parents[1] / "asks" / "scenarios" / "ask-user.yaml")


async def test_unanswered_it_expires_and_the_model_goes_on(
    daemon: RunningDaemon, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The asks' own deadline (30 minutes), made short: no setting holds it.
    monkeypatch.setattr(person_asks, "ASK_USER_SECONDS", 2.0)
    agent = await daemon.deck.create_agent(AgentSpec(prompt="start", scenario=ONE))

    async def said() -> str | None:
        current = await daemon.deck.get_agent(agent.id)
        result = current.extra.get("last_result")
        return str(result) if result else None

    assert await eventually(said, timeout=90, what="the model's reply") == "WENT-ON-WITHOUT"
    (ask,) = (await api.get("/api/asks", params={"state": "expired"})).json()["asks"]
    assert (ask["agent_id"], ask["answered_by"]) == (agent.id, "timeout")
    late = await api.post(f"/api/asks/{ask['id']}", json={"answer": "1"})
    assert late.status_code == 409, late.text


async def test_a_killed_asker_cancels_its_question(
    daemon: RunningDaemon, api: httpx.AsyncClient
) -> None:
    agent = await daemon.deck.create_agent(AgentSpec(prompt="start", scenario=ONE))

    async def pending() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await api.get("/api/asks")).json()["asks"]
        return found

    (ask,) = await eventually(pending, timeout=90, what="the question")
    await daemon.deck.kill(agent.id)

    async def cancelled() -> str | None:
        state = (await api.get(f"/api/asks/{ask['id']}")).json()["state"]
        return str(state) if state != "pending" else None

    assert await eventually(cancelled, timeout=30, what="the question closed") == "cancelled"
