"""The optional model-written summary, against the scripted model: off by
default, never over its budget, and a failing model changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr

from agentdeck.core.memory import SessionSummary
from agentdeck.memory.model_summary import PRICES, plan, prices
from agentdeck.memory.service import Memory
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.support.mockmodel import running_mock

pytestmark = pytest.mark.anyio

CHAT_REPLY = "Hello! I am the scripted model. Ask me anything."


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    settings.ensure_home()
    async with Store.open(settings.db_path) as opened:
        yield opened


async def finished_session(memory: Memory, project: Path) -> SessionSummary:
    await memory.observe(
        agent_id="a1",
        session_id="s1",
        project=str(project),
        tool="Bash",
        tool_input={"command": "pytest"},
        output={"stdout": "3 passed"},
        is_error=False,
    )
    summary = await memory.summarize(
        agent_id="a1",
        session_id="s1",
        project=str(project),
        final_message="All green.",
        request="run the tests",
        final=True,
    )
    assert summary is not None
    await memory.drain()
    return summary


def model_settings(settings: Settings, url: str, **changes: object) -> Settings:
    return settings.model_copy(
        update={
            "memory_model_summary": True,
            "anthropic_base_url": url,
            "anthropic_api_key": SecretStr("sk-test"),
            **changes,
        }
    )


async def test_off_by_default_no_request_is_made(
    settings: Settings, store: Store, tmp_path: Path
) -> None:
    async with running_mock("chat") as mm:
        memory = Memory(
            store, settings.model_copy(update={"anthropic_base_url": mm.url_for("chat")})
        )
        summary = await finished_session(memory, tmp_path)
        assert mm.requests == []
        stored = await memory.records.get(summary.id)
        assert isinstance(stored, SessionSummary) and stored.model_summary is None


async def test_on_the_model_writes_the_summary_within_budget(
    settings: Settings, store: Store, tmp_path: Path
) -> None:
    async with running_mock("chat") as mm:
        memory = Memory(store, model_settings(settings, mm.url_for("chat")))
        summary = await finished_session(memory, tmp_path)
        [request] = [r for r in mm.requests if r.path.endswith("/messages")]
        assert request.body["max_tokens"] <= 400
        assert "pytest" in request.body["messages"][0]["content"]
        stored = await memory.records.get(summary.id)
        assert isinstance(stored, SessionSummary) and stored.model_summary == CHAT_REPLY
        notices = [e for e in await store.read(agent_id="a1") if e.type == "notice"]
        assert notices and 0 < notices[-1].data["detail"]["cost_usd"] <= 0.05


async def test_a_budget_too_small_for_a_summary_makes_no_request(
    settings: Settings, store: Store, tmp_path: Path
) -> None:
    async with running_mock("chat") as mm:
        tiny = model_settings(settings, mm.url_for("chat"), memory_summary_budget_usd=0.0001)
        memory = Memory(store, tiny)
        summary = await finished_session(memory, tmp_path)
        assert mm.requests == []
        stored = await memory.records.get(summary.id)
        assert isinstance(stored, SessionSummary) and stored.model_summary is None


def faulty(tmp_path: Path, name: str, fault: dict[str, object]) -> Path:
    scenario = tmp_path / f"{name}.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "turns": [{"reply": [{"text": "never"}]}],
                "faults": [{"on_request": 1, "always": True, **fault}],
            }
        )
    )
    return scenario


@pytest.mark.parametrize(
    "name, fault",
    [
        ("server-error", {"http_status": 500}),
        ("rate-limited", {"http_status": 429, "retry_after": 0}),
        ("hung", {"hang": True}),
    ],
)
async def test_a_failing_model_leaves_the_token_free_summary(
    settings: Settings, store: Store, tmp_path: Path, name: str, fault: dict[str, object]
) -> None:
    async with running_mock(faulty(tmp_path, name, fault)) as mm:
        # A hung model is bounded by the same setting as the agents' own requests.
        bounded = model_settings(settings, mm.url_for(name), api_timeout_seconds=0.5)
        memory = Memory(store, bounded)
        summary = await finished_session(memory, tmp_path)
        assert len(mm.requests) == 1, "one request, never retried"
        stored = await memory.records.get(summary.id)
        assert isinstance(stored, SessionSummary)
        assert stored.model_summary is None and "pytest" in stored.commands


def test_the_plan_never_exceeds_the_budget() -> None:
    for model in ("claude-haiku-4-5", "claude-sonnet-4-5", "some-new-model"):
        for budget in (0.001, 0.01, 0.05, 1.0):
            made = plan("x" * 20_000, model, budget)
            if made is not None:
                assert made.worst_case_usd <= budget
    assert prices("mystery") == PRICES["opus"], "unknown models are priced as the dearest"
