"""The built-in catalog uses memories (issue 31): its engineer and tester are told
to propose a durable learning with the deck's ``remember(text, kind)`` tool, and
their tool lists (which bound what they may use) leave it to them. On the real
Claude Code CLI and the scripted model, the built-in engineer's memory lands in
the Memories inbox."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState
from agentdeck.core.memory_proposals import KINDS
from agentdeck.core.policy import Decision, decide
from agentdeck.core.templates import apply_template
from agentdeck.governance.governor import Governor
from agentdeck.orchestration.templates import resolve
from agentdeck.settings import Settings
from agentdeck.store import Store
from tests.support.deckcli import deck, deck_env
from tests.support.mockmodel import running_mock_in_thread

SCENARIO = Path(__file__).parent / "scenarios" / "catalog_remember.yaml"
REMEMBER = "mcp__deck__remember"


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["engineer", "tester", "reviewer", "researcher"])
async def test_the_catalogs_workers_are_told_to_remember_and_may(
    name: str, settings: Settings, tmp_path: Path
) -> None:
    template = resolve(settings, name)
    assert template.scope == "built-in"
    assert "remember(text, kind)" in template.prompt, name
    told = {k for k in KINDS if f"`{k}`" in template.prompt}
    assert told and told <= set(KINDS), (name, told)  # only kinds the tool takes
    assert "secret" in template.prompt, name  # and told what never to keep
    assert template.tools and REMEMBER not in template.tools  # a deck tool, not listed
    now = time.time()
    spec = apply_template(template, AgentSpec(prompt="go", cwd=str(tmp_path)))
    agent = Agent(
        id="a1", name="w", state=AgentState.RUNNING, spec=spec, cwd=str(tmp_path),
        created_at=now, updated_at=now, source=AgentSource.AGENTDECK,
    )  # fmt: skip
    store = Store.open(settings.db_path)
    try:
        profile = Governor(store, settings).own_profile(agent)
    finally:
        await store.close()
    args = {"text": "the tests run with make test", "kind": "command"}
    home = str(settings.home)
    verdict = decide(profile, REMEMBER, args, workspace=str(tmp_path), home=home)
    assert verdict.decision is Decision.ALLOW, verdict.reason
    # The tool list still bounds the rest: a tool it does not name is refused.
    other = decide(profile, "WebFetch", {"url": "https://x"}, workspace=str(tmp_path), home=home)
    if name != "researcher":
        assert other.decision is Decision.DENY, other.reason


@pytest.mark.cli
def test_the_built_in_engineers_memory_waits_in_the_inbox(tmp_path: Path) -> None:
    with running_mock_in_thread(SCENARIO) as model:
        env = deck_env(
            tmp_path,
            AGENTDECK_ANTHROPIC_BASE_URL=model.url_for("catalog_remember"),
            AGENTDECK_ANTHROPIC_API_KEY="sk-scripted",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )
        here = tmp_path / "project"
        here.mkdir()
        done = deck(env, "run", "--agent", "engineer", "--cwd", str(here), "TASK", "--json")
        assert done.code == 0, done.err[-3000:]
        made = done.json()["agent"]
        assert made["state"] == "done", made
        waiting = deck(env, "memories", "pending", "--json")
        assert waiting.code == 0, waiting.err[-2000:]
    [memory] = waiting.json()
    assert memory["agent_id"] == made["id"] and memory["state"] == "pending"
    assert (memory["template"], memory["project"], memory["kind"]) == (
        "engineer",
        str(here),
        "command",
    )
    assert memory["text"].startswith("CATALOG-LEARNED")
