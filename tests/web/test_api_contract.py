"""The API keeps the contract its OpenAPI document states, checked by schemathesis
against the real daemon app (examples, coverage, fuzzing and the stateful phase);
agents it creates run on the scripted model. And the refusals it found, named."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentdeck.settings import Settings
from tests.conftest import make_settings
from tests.support.mockmodel import running_mock

from .conftest import RunningDaemon, running_daemon

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


@pytest.fixture
async def scripted_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[RunningDaemon]:
    """A daemon whose agents, unless told otherwise, talk to the scripted model (its
    ``chat`` scenario), and of which few may run at once."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-agentdeck-scripted")
    async with running_mock("chat") as model:
        settings: Settings = make_settings(
            tmp_path, anthropic_base_url=model.url_for("chat"), max_live_agents=3
        )
        async with running_daemon(settings) as daemon:
            yield daemon


async def test_schemathesis_finds_no_breach_of_the_contract(
    scripted_daemon: RunningDaemon, tmp_path: Path
) -> None:
    daemon = scripted_daemon
    proc = await asyncio.create_subprocess_exec(
        str(SCHEMATHESIS), "run", f"{daemon.url}/openapi.json",
        "--header", f"Authorization: Bearer {daemon.token}",
        "--checks", "all",
        # A valid-looking request the deck refuses on what it knows (an ambiguous
        # name, an unknown profile) is a 4xx by design; a route with a parameter
        # (/api/agents/{ref}) answers for /api/agents/external's other methods.
        "--exclude-checks", "positive_data_acceptance,unsupported_method",
        "--suppress-health-check", "filter_too_much",
        # The stream never ends by design: a reader's connection is held open.
        "--exclude-path-regex", r"/stream$",
        "--phases", "examples,coverage,fuzzing,stateful",
        "--max-examples", "6",
        "--seed", "1",
        "--request-timeout", "30",
        "--no-color",
        cwd=tmp_path,
        env={**os.environ, "SCHEMATHESIS_HOOKS": ""},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await proc.communicate()
    report = out.decode("utf-8", "replace")
    (tmp_path / "schemathesis.txt").write_text(report)
    assert proc.returncode == 0, f"{tmp_path / 'schemathesis.txt'}:\n{report[-12_000:]}"


async def test_malformed_bodies_and_unknown_routes_answer_in_the_error_shape(
    api: object,
) -> None:
    import httpx

    assert isinstance(api, httpx.AsyncClient)
    broken = await api.post(
        "/api/agents", content=b'{"prompt": ', headers={"content-type": "application/json"}
    )
    assert broken.status_code == 422
    assert broken.json()["error"]["status"] == 422 and "body" in broken.json()["error"]["message"]
    nowhere = await api.get("/api/no-such-thing")
    assert nowhere.status_code == 404 and nowhere.json()["error"]["status"] == 404
    wrong = await api.delete("/api/agents")
    assert wrong.status_code == 405 and wrong.json()["error"]["message"] == "Method Not Allowed"
    zero = await api.post("/api/agents", json={"prompt": "hi", "budget_usd": 0})
    assert zero.status_code == 422 and "budget_usd" in zero.json()["error"]["message"]
    nul = await api.post("/api/agents", json={"prompt": "hi", "name": "a\u0000b"})
    assert nul.status_code == 422 and "NUL" in nul.json()["error"]["message"]


async def test_every_openapi_link_names_an_operation_that_exists(api: object) -> None:
    import httpx

    assert isinstance(api, httpx.AsyncClient)
    spec = (await api.get("/openapi.json")).json()
    operations = {op["operationId"] for ops in spec["paths"].values() for op in ops.values()}
    links = [
        link
        for ops in spec["paths"].values()
        for op in ops.values()
        for answer in op.get("responses", {}).values()
        for link in answer.get("links", {}).values()
    ]
    assert len(links) >= 11  # a created agent's, and a spawned child's
    assert {link["operationId"] for link in links} <= operations
