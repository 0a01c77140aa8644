"""RemoteDeck on its own: what it sends to start an agent (the API's own schema turns
it back into the spec it was made from; a field the API cannot carry is refused,
not dropped), and a daemon that does not answer."""

from __future__ import annotations

import socket

import pytest

from agentdeck.client.deck import RemoteDeck, create_body
from agentdeck.core.agent import AgentSpec
from agentdeck.errors import DaemonUnavailable, UsageError
from agentdeck.web.schemas import AgentCreate

FULL = AgentSpec(
    prompt="fix the tests",
    name="fixer",
    cwd="/srv/app",
    model="claude-x",
    allow=("Read", "Bash(git status)"),
    deny=("WebFetch",),
    append_system_prompt="be brief",
    max_turns=7,
    budget_usd=1.5,
    scenario="chat",
    resume_on_restart=True,
    profile="strict",
    workspace="worktree",
    project="/srv",
    base="main",
)


@pytest.mark.parametrize(
    "spec", [FULL, AgentSpec(prompt="hello"), AgentSpec(prompt="x", cwd="/srv/app")]
)
def test_the_api_rebuilds_the_spec_sent(spec: AgentSpec) -> None:
    body = create_body(spec, keep_alive=False, template=None)
    created = AgentCreate.model_validate(body)
    assert created.keep_alive is False and created.agent is None
    # The API's one rule of its own: the project defaults to the cwd.
    assert created.to_spec() == AgentSpec(**{**spec.__dict__, "project": spec.project or spec.cwd})


def test_a_template_is_sent_by_name() -> None:
    body = create_body(AgentSpec(prompt="lead"), keep_alive=True, template="orchestrator")
    assert AgentCreate.model_validate(body).agent == "orchestrator"


@pytest.mark.parametrize(
    ("field", "value"),
    [("tools", ("Read",)), ("orchestrator", True), ("owner", "alice"), ("template", "engineer")],
)
def test_a_field_the_api_cannot_carry_is_refused(field: str, value: object) -> None:
    spec = AgentSpec(prompt="hello", **{field: value})  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=field):
        create_body(spec, keep_alive=True, template=None)


@pytest.mark.anyio
async def test_a_daemon_that_does_not_answer_is_unavailable() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        url = f"http://127.0.0.1:{taken.getsockname()[1]}"
        async with RemoteDeck.connect(url, "token", client="cli") as deck:
            with pytest.raises(DaemonUnavailable, match="did not answer"):
                await deck.get_agent("anyone")
            with pytest.raises(DaemonUnavailable):
                async for _ in deck.follow(after=0):
                    pass
