"""The REST API without the Claude Code CLI: listing, events, stats, errors, OpenAPI.

Agents are seeded straight into the daemon's store (as a runner would record them).
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import AssistantText, StoredEvent, spawned_events
from tests.web.conftest import RunningDaemon

pytestmark = pytest.mark.anyio


async def seed(
    daemon: RunningDaemon, name: str, state: AgentState, *, cost: float = 0.0, tokens: int = 0
) -> Agent:
    now = time.time()
    agent = Agent(
        id=f"ag{name.replace('-', '')}{int(now * 1e6) % 10**6:06d}",
        name=name,
        state=state,
        spec=AgentSpec(prompt=f"prompt of {name}"),
        cwd="/tmp",
        created_at=now,
        updated_at=now,
        cost_usd=cost,
        input_tokens=tokens,
        output_tokens=tokens,
    )
    await daemon.deck._store.record(spawned_events(agent), agent)
    return agent


async def say(daemon: RunningDaemon, agent: Agent, n: int) -> list[StoredEvent]:
    return await daemon.deck._store.append(
        [AssistantText(agent_id=agent.id, ts=time.time(), text=f"line {i}") for i in range(n)]
    )


async def test_list_filters_and_pages(daemon: RunningDaemon, api: httpx.AsyncClient) -> None:
    done = [await seed(daemon, f"done-{i}", AgentState.DONE) for i in range(5)]
    idle = await seed(daemon, "idle-one", AgentState.IDLE)
    err = await seed(daemon, "broken", AgentState.ERROR)

    everyone = (await api.get("/api/agents")).json()
    assert [a["id"] for a in everyone["agents"]] == [
        err.id,
        idle.id,
        *reversed([a.id for a in done]),
    ]
    assert everyone["next_offset"] is None and everyone["offset"] == 0

    r = await api.get("/api/agents", params=[("state", "idle"), ("state", "error")])
    assert {a["id"] for a in r.json()["agents"]} == {idle.id, err.id}

    assert [a["name"] for a in (await api.get("/api/agents?q=brok")).json()["agents"]] == ["broken"]

    pages: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = (await api.get("/api/agents", params={"limit": 2, "offset": offset})).json()
        assert page["limit"] == 2 and len(page["agents"]) <= 2
        pages += [a["id"] for a in page["agents"]]
        offset = page["next_offset"]
    assert pages == [a["id"] for a in everyone["agents"]]

    # The shape is Agent.to_dict().
    one = (await api.get(f"/api/agents/{idle.id}")).json()
    assert one == idle.to_dict()


async def test_archive_hides_then_restores(daemon: RunningDaemon, api: httpx.AsyncClient) -> None:
    agent = await seed(daemon, "old-news", AgentState.DONE)
    r = await api.post(f"/api/agents/{agent.name}/archive", json={"archived": True})
    assert r.status_code == 200 and r.json()["id"] == agent.id
    assert (await api.get("/api/agents")).json()["agents"] == []
    shown = (await api.get("/api/agents?archived=true")).json()["agents"]
    assert [a["id"] for a in shown] == [agent.id]
    await api.post(f"/api/agents/{agent.id[:6]}/archive", json={"archived": False})
    assert [a["id"] for a in (await api.get("/api/agents")).json()["agents"]] == [agent.id]


async def test_events_page_through_the_log(daemon: RunningDaemon, api: httpx.AsyncClient) -> None:
    a = await seed(daemon, "talker", AgentState.IDLE)
    b = await seed(daemon, "other", AgentState.IDLE)
    await say(daemon, a, 30)
    await say(daemon, b, 10)
    log = await daemon.deck._store.read(limit=10_000)

    seen: list[int] = []
    after = 0
    while True:
        page = (await api.get("/api/events", params={"after": after, "limit": 7})).json()
        if not page["events"]:
            assert page["next_after"] == after
            break
        assert len(page["events"]) <= 7
        seen += [e["id"] for e in page["events"]]
        after = page["next_after"]
        assert after == seen[-1]
    assert seen == [e.id for e in log]

    only_a = (await api.get("/api/events", params={"agent": a.id, "limit": 5000})).json()
    assert [e["id"] for e in only_a["events"]] == [e.id for e in log if e.agent_id == a.id]
    assert only_a["events"][-1] == log[[e.id for e in log].index(only_a["next_after"])].to_dict()


async def test_events_page_backwards_from_the_end(
    daemon: RunningDaemon, api: httpx.AsyncClient
) -> None:
    a = await seed(daemon, "talker", AgentState.IDLE)
    b = await seed(daemon, "other", AgentState.IDLE)
    await say(daemon, a, 30)
    await say(daemon, b, 10)
    log = [e.id for e in await daemon.deck._store.read(limit=10_000) if e.agent_id == a.id]

    # The newest page first (oldest first within it), then older pages until none is left.
    before = (await daemon.deck._store.last_event_id()) + 1
    pages: list[list[int]] = []
    while before is not None:
        page = (
            await api.get("/api/events", params={"agent": a.id, "before": before, "limit": 7})
        ).json()
        ids = [e["id"] for e in page["events"]]
        assert ids == sorted(ids) and len(ids) <= 7 and all(i < before for i in ids)
        pages.append(ids)
        before = page["next_before"]
    assert pages[0] == log[-7:]
    assert [i for page in reversed(pages) for i in page] == log
    assert len(pages[-1]) == len(log) % 7 or len(log) % 7 == 0

    # Forward pages never say there is an older one; both directions at once is refused.
    forward = (await api.get("/api/events", params={"agent": a.id, "limit": 3})).json()
    assert forward["next_before"] is None
    r = await api.get("/api/events", params={"after": 3, "before": 9})
    assert r.status_code == 400 and "not both" in r.json()["error"]["message"]
    r = await api.get("/api/events", params={"before": 0})
    assert r.status_code == 422 and "before" in r.json()["error"]["message"]


async def test_stats(daemon: RunningDaemon, api: httpx.AsyncClient) -> None:
    await seed(daemon, "one", AgentState.DONE, cost=0.25, tokens=100)
    await seed(daemon, "two", AgentState.DONE, cost=0.5, tokens=20)
    await seed(daemon, "three", AgentState.IDLE)
    stats = (await api.get("/api/stats")).json()
    assert stats["agents_by_state"] == {"done": 2, "idle": 1}
    assert stats["agents"] == 3
    assert stats["cost_usd"] == pytest.approx(0.75)
    assert stats["input_tokens"] == 120 and stats["output_tokens"] == 120
    assert stats["last_event_id"] == await daemon.deck._store.last_event_id()
    assert isinstance(stats["refused_transitions"], dict)  # this process's: see below


async def test_stats_show_a_refused_transition(
    daemon: RunningDaemon, api: httpx.AsyncClient
) -> None:
    """An illegal state change is never written, but it is counted where a person
    looks: the daemon's stats (this process's count, as the daemon's is its own)."""
    from agentdeck.core.lifecycle import REFUSALS

    agent = await seed(daemon, "ended", AgentState.DONE)
    before = REFUSALS.as_dict().get("done -> running", 0)
    REFUSALS.note(agent, AgentState.RUNNING)  # what transition() does for an illegal one
    stats = (await api.get("/api/stats")).json()
    assert stats["refused_transitions"]["done -> running"] == before + 1


async def test_unknown_agent_is_404_json(api: httpx.AsyncClient) -> None:
    for method, path in [
        ("GET", "/api/agents/nope"),
        ("POST", "/api/agents/nope/interrupt"),
        ("POST", "/api/agents/nope/kill"),
        ("POST", "/api/agents/nope/resume"),
        ("POST", "/api/agents/nope/archive"),
        ("GET", "/api/events?agent=nope"),
        ("GET", "/api/events/stream?agent=nope"),
    ]:
        r = await api.request(method, path)
        assert r.status_code == 404, (path, r.text)
        error = r.json()["error"]
        assert error["status"] == 404 and "nope" in error["message"], path
        assert (error["kind"], error["id"]) == ("agent", "nope"), path  # what was not found
    r = await api.post("/api/agents/nope/messages", json={"text": "hi"})
    assert r.status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/api/agents", {}, "prompt"),
        ("POST", "/api/agents", {"prompt": ""}, "prompt"),
        ("POST", "/api/agents", {"prompt": "   "}, "prompt"),
        ("POST", "/api/agents", {"prompt": "x", "max_turns": 0}, "max_turns"),
        ("POST", "/api/agents", {"prompt": "x", "budget_usd": -1}, "budget_usd"),
        ("POST", "/api/agents", {"prompt": "x", "allow": "Bash"}, "allow"),
        ("POST", "/api/agents", {"prompt": "x", "colour": "red"}, "colour"),
        ("POST", "/api/agents/x/messages", {}, "text"),
        ("POST", "/api/agents/x/archive", {"archived": "maybe"}, "archived"),
        ("GET", "/api/agents?state=sleeping", None, "state"),
        ("GET", "/api/agents?limit=0", None, "limit"),
        ("GET", "/api/events?limit=5001", None, "limit"),
        ("GET", "/api/events?after=-1", None, "after"),
    ],
)
async def test_invalid_requests_are_422_naming_the_field(
    daemon: RunningDaemon,
    api: httpx.AsyncClient,
    method: str,
    path: str,
    body: object,
    field: str,
) -> None:
    r = await api.request(method, path, json=body)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["status"] == 422 and field in error["message"]
    assert any(field in p["field"] for p in error["problems"])
    assert await daemon.deck._store.list_agents(include_archived=True) == []


@pytest.mark.parametrize("budget", ["NaN", "Infinity", "-Infinity", "1e400"])
async def test_a_budget_that_is_no_amount_is_422(
    daemon: RunningDaemon, api: httpx.AsyncClient, budget: str
) -> None:
    # Python's JSON reads these (1e400 as inf); none is an amount Claude Code can keep.
    body = '{"prompt": "x", "budget_usd": ' + budget + "}"
    r = await api.post("/api/agents", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert "budget_usd" in r.json()["error"]["message"]
    assert await daemon.deck._store.list_agents(include_archived=True) == []


async def test_a_reference_longer_than_any_agents_is_422(
    daemon: RunningDaemon, api: httpx.AsyncClient
) -> None:
    # An id prefix this long was SQLite's "LIKE or GLOB pattern too complex" (a 500).
    await api.post("/api/agents", json={"prompt": "hi", "scenario": "chat"})
    for path in ("/api/agents/{}", "/api/agents?parent={}", "/api/events?agent={}"):
        r = await api.get(path.format("x" * 60_000))
        assert r.status_code == 422, (path, r.text[:500])
        assert "at most 1,000 characters" in r.json()["error"]["message"]


async def test_bad_scenario_and_missing_cwd(
    daemon: RunningDaemon, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nturns:\n  - reply:\n      - {banana: 1}\n")
    r = await api.post("/api/agents", json={"prompt": "hi", "scenario": str(bad)})
    assert r.status_code == 422, r.text
    assert "bad.yaml" in r.json()["error"]["message"]
    assert "turn" in r.json()["error"]["message"]

    r = await api.post("/api/agents", json={"prompt": "hi", "cwd": str(tmp_path / "missing")})
    assert r.status_code == 400, r.text
    assert "missing" in r.json()["error"]["message"]
    assert await daemon.deck._store.list_agents(include_archived=True) == []


async def test_steering_a_finished_agent_is_409(
    daemon: RunningDaemon, api: httpx.AsyncClient
) -> None:
    agent = await seed(daemon, "finished", AgentState.DONE)
    for action in ("interrupt", "kill"):
        r = await api.post(f"/api/agents/{agent.id}/{action}")
        assert r.status_code == 409, r.text
        assert r.json()["error"]["message"] == f"agent {agent.id} is done; cannot {action}"
    # Never started a Claude session: nothing to resume.
    r = await api.post(f"/api/agents/{agent.id}/resume", json={})
    assert r.status_code == 409 and "resume" in r.json()["error"]["message"]


async def test_openapi_documents_the_api(daemon: RunningDaemon) -> None:
    async with daemon.client() as client:
        doc = (await client.get("/openapi.json")).json()
    paths = doc["paths"]
    for path, method in [
        ("/api/agents", "get"),
        ("/api/agents", "post"),
        ("/api/agents/{ref}", "get"),
        ("/api/agents/{ref}/messages", "post"),
        ("/api/agents/{ref}/interrupt", "post"),
        ("/api/agents/{ref}/kill", "post"),
        ("/api/agents/{ref}/resume", "post"),
        ("/api/agents/{ref}/archive", "post"),
        ("/api/events", "get"),
        ("/api/events/stream", "get"),
        ("/api/stats", "get"),
    ]:
        assert method in paths[path], (path, method)
    create = doc["components"]["schemas"]["AgentCreate"]
    assert create["required"] == ["prompt"]
    assert create["properties"]["keep_alive"]["default"] is True
    assert "text/event-stream" in paths["/api/events/stream"]["get"]["responses"]["200"]["content"]
