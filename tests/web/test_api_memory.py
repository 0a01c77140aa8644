"""/api/memory against a real daemon app (Deck + uvicorn) with seeded memory."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from agentdeck.web.schemas_memory import record_to_dict
from tests.support.memory_records import Seeded, records, write

from .conftest import RunningDaemon

pytestmark = pytest.mark.anyio


@pytest.fixture
async def seeded(daemon: RunningDaemon, tmp_path: Path) -> Seeded:
    seeded = records(tmp_path / "work")
    await write(daemon.deck._memory, seeded)
    return seeded


async def hit_ids(api: httpx.AsyncClient, q: str, **params: str) -> list[str]:
    r = await api.get("/api/memory/search", params={"q": q, **params})
    assert r.status_code == 200, r.text
    return [h["id"] for h in r.json()["hits"]]


async def test_search_returns_index_entries(api: httpx.AsyncClient, seeded: Seeded) -> None:
    r = await api.get("/api/memory/search", params={"q": "flaky"})
    assert r.status_code == 200, r.text
    hits = r.json()["hits"]
    assert {h["id"] for h in hits} == {seeded.flaky.id, seeded.fixed.id}
    flaky = next(h for h in hits if h["id"] == seeded.flaky.id)
    assert flaky["kind"] == "observation"
    assert flaky["project"] == str(seeded.project_a)
    assert flaky["session_id"] == "sess-a"
    assert flaky["ts"] == pytest.approx(seeded.flaky.ts)
    assert "[flaky]" in flaky["snippet"]
    assert set(flaky) == {"id", "kind", "project", "session_id", "ts", "title", "snippet", "score"}

    assert await hit_ids(api, "calc", project=str(seeded.project_b)) == [seeded.calc.id]
    assert await hit_ids(api, "calc", project=str(seeded.project_a)) == []
    assert len(await hit_ids(api, "flaky", limit="1")) == 1
    assert await hit_ids(api, "") == []
    assert await hit_ids(api, '"unbalanced AND (') == []  # any text is a query


async def test_bad_search_parameters_are_clear(api: httpx.AsyncClient, seeded: Seeded) -> None:
    relative = await api.get("/api/memory/search", params={"q": "calc", "project": "proj-b"})
    assert relative.status_code == 400
    assert "absolute directory" in relative.json()["error"]["message"]
    too_many = await api.get("/api/memory/search", params={"q": "calc", "limit": "1000"})
    assert too_many.status_code == 422
    assert too_many.json()["error"]["message"].startswith("invalid limit")
    missing = await api.get("/api/memory/search")
    assert missing.status_code == 422 and "q" in missing.json()["error"]["message"]


async def test_get_gives_the_whole_record(api: httpx.AsyncClient, seeded: Seeded) -> None:
    for record in (seeded.flaky, seeded.calc, seeded.fixed):
        r = await api.get(f"/api/memory/{record.id}")
        assert r.status_code == 200, r.text
        assert r.json() == record_to_dict(record)
    assert (await api.get(f"/api/memory/{seeded.fixed.id}")).json()["kind"] == "summary"


@pytest.mark.parametrize("ref", ["obnope", "su000000000000", "xyz"])
async def test_unknown_id_is_404(api: httpx.AsyncClient, seeded: Seeded, ref: str) -> None:
    for method in ("GET", "DELETE"):
        r = await api.request(method, f"/api/memory/{ref}")
        assert r.status_code == 404, (method, r.text)
        error = r.json()["error"]
        assert error["type"] == "NotFound" and ref in error["message"]


async def test_stats(api: httpx.AsyncClient, seeded: Seeded) -> None:
    r = await api.get("/api/memory/stats")
    assert r.json() == {"observations": 2, "summaries": 1, "projects": 2}


async def test_forget_one_a_session_and_a_project(api: httpx.AsyncClient, seeded: Seeded) -> None:
    r = await api.delete(f"/api/memory/{seeded.flaky.id}")
    assert r.status_code == 200 and r.json() == {"forgotten": 1}
    assert (await api.get(f"/api/memory/{seeded.flaky.id}")).status_code == 404
    assert await hit_ids(api, "flaky") == [seeded.fixed.id]

    r = await api.delete("/api/memory", params={"session": "sess-a"})
    assert r.json() == {"forgotten": 1}
    assert await hit_ids(api, "flaky") == []

    r = await api.delete("/api/memory", params={"project": str(seeded.project_b)})
    assert r.json() == {"forgotten": 1}
    r = await api.delete("/api/memory", params={"project": str(seeded.project_b)})
    assert r.json() == {"forgotten": 0}
    stats = (await api.get("/api/memory/stats")).json()
    assert stats == {"observations": 0, "summaries": 0, "projects": 0}


@pytest.mark.parametrize(
    "params",
    [{}, {"session": "sess-a", "project": "/x"}, {"session": " "}, {"project": "proj-a"}],
    ids=["none", "both", "blank-session", "relative-project"],
)
async def test_forget_many_needs_one_good_selector_and_loses_nothing(
    api: httpx.AsyncClient, seeded: Seeded, params: dict[str, str]
) -> None:
    r = await api.delete("/api/memory", params=params)
    assert r.status_code == 400, r.text
    message = r.json()["error"]["message"]
    assert "exactly one of session" in message or "absolute directory" in message
    assert (await api.get("/api/memory/stats")).json()["observations"] == 2


async def test_every_memory_route_needs_the_token(daemon: RunningDaemon, seeded: Seeded) -> None:
    async with daemon.client(token="") as anonymous:
        for method, path in (
            ("GET", "/api/memory/search?q=flaky"),
            ("GET", f"/api/memory/{seeded.flaky.id}"),
            ("GET", "/api/memory/stats"),
            ("DELETE", f"/api/memory/{seeded.flaky.id}"),
            ("DELETE", "/api/memory?session=sess-a"),
        ):
            r = await anonymous.request(method, path)
            assert r.status_code == 401, (method, path)
    async with daemon.client(token="wrong") as wrong:
        assert (await wrong.get("/api/memory/stats")).status_code == 401
    assert (await daemon.deck._memory.stats())["observations"] == 2  # nothing was deleted


async def test_documented_in_openapi(api: httpx.AsyncClient) -> None:
    spec = (await api.get("/openapi.json")).json()
    paths = spec["paths"]
    assert set(paths["/api/memory"]) == {"delete"}
    assert {"get", "delete"} <= set(paths["/api/memory/{memory_id}"])
    assert "get" in paths["/api/memory/search"] and "get" in paths["/api/memory/stats"]
