"""What an agent's spec and the settings turn into, seen from the model's side."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest
import yaml
from pydantic import SecretStr

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.mockmodel.selection import system_text
from agentdeck.runner.runner import Runner
from agentdeck.store.store import Store
from tests.support.waiting import wait_event

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


def model_requests(runner: Runner) -> list[dict[str, object]]:
    (model,) = runner.scripted_models().values()
    return [r.body for r in model.requests if r.path.endswith("/v1/messages")]


async def test_model_and_appended_prompt_reach_the_model(deck: tuple[Store, Runner]) -> None:
    _, runner = deck
    spec = AgentSpec(
        prompt="hello",
        scenario="chat",
        model="sonnet",
        append_system_prompt="HOUSE-RULE-7: be terse.",
    )
    session = await runner.start(spec)
    await session.wait_finished(timeout=60)
    assert session.agent.state == AgentState.DONE
    (body,) = model_requests(runner)
    assert body["model"] == "claude-sonnet-5-5"
    system = system_text(body)
    assert "HOUSE-RULE-7: be terse." in system
    # Claude Code's own prompt, not the SDK's empty default
    assert "You are Claude Code" in system


async def test_max_turns_stops_the_agent_with_an_error(deck: tuple[Store, Runner]) -> None:
    store, runner = deck
    session = await runner.start(AgentSpec(prompt="tidy", scenario="demo", max_turns=1))
    await session.wait_finished(timeout=60)
    assert session.agent.state == AgentState.ERROR
    turn = await wait_event(store, session.agent.id, EventType.TURN_COMPLETED)
    assert turn.data["terminal_reason"] == "max_turns"
    assert turn.data["subtype"] == "error_max_turns"
    assert session.agent.last_error and "maximum number of turns" in session.agent.last_error


async def test_budget_stops_the_agent(deck: tuple[Store, Runner]) -> None:
    store, runner = deck
    session = await runner.start(AgentSpec(prompt="tidy", scenario="demo", budget_usd=0.01))
    await session.wait_finished(timeout=60)
    assert session.agent.state == AgentState.ERROR
    turn = await wait_event(store, session.agent.id, EventType.TURN_COMPLETED)
    assert turn.data["is_error"] is True
    assert len(model_requests(runner)) < 5  # stopped before the script's end


async def test_deny_rule_removes_a_tool(deck: tuple[Store, Runner]) -> None:
    store, runner = deck
    session = await runner.start(AgentSpec(prompt="tidy", scenario="demo", deny=("Bash",)))
    await session.wait_finished(timeout=60)
    events = await store.read(agent_id=session.agent.id)
    bash = [e for e in events if e.type == EventType.TOOL_CALLED and e.data["tool"] == "Bash"]
    result = next(
        e
        for e in events
        if e.type == EventType.TOOL_RETURNED
        and e.data["tool_use_id"] == bash[0].data["tool_use_id"]
    )
    assert result.data["is_error"] and "No such tool available" in result.data["output"]
    assert "Bash" not in [t["name"] for t in model_requests(runner)[0]["tools"]]


async def test_environment_passthrough(
    deck: tuple[Store, Runner], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, runner = deck
    monkeypatch.setenv("CLAUDECODE", "1")  # as when agentdeck runs inside Claude Code
    runner.settings.claude_code_oauth_token = SecretStr("oauth-test-token")
    session = await runner.start(
        AgentSpec(prompt="go", scenario="long-tool", allow=("Bash(python3:*)",))
    )
    await wait_event(store, session.agent.id, EventType.TOOL_CALLED)
    assert session.pid is not None
    env = psutil.Process(session.pid).environ()
    assert "CLAUDECODE" not in env
    assert env["ANTHROPIC_BASE_URL"] == runner.scripted_models()["long-tool"].url_for("long-tool")
    assert env["CLAUDE_CODE_MAX_RETRIES"] == str(runner.settings.max_retries)
    assert env["CLAUDE_CODE_OAUTH_TOKEN"] == "oauth-test-token"
    assert env["CLAUDE_CONFIG_DIR"] == str(runner.settings.claude_config_dir)
    # Installed command hooks step aside for exactly this process: marked as an
    # agent's, and a direct child of the runner that says so.
    assert env["AGENTDECK_AGENT_ID"] == session.agent.id
    assert env["AGENTDECK_RUNNER_PID"] == str(os.getpid())
    assert psutil.Process(session.pid).ppid() == os.getpid()
    await session.kill()
    # the token never lands in the log
    assert "oauth-test-token" not in str([e.data for e in await store.read(limit=100_000)])


@pytest.mark.anyio
async def test_no_answer_is_sent_to_a_process_being_stopped() -> None:
    """A callback's answer to a CLI the deck is terminating would fail in the
    SDK's own task: a held callback waits to be cancelled instead."""
    import asyncio

    from claude_agent_sdk.types import HookMatcher

    from agentdeck.runner.callbacks import held, held_hooks

    stopping = False
    decided = asyncio.Event()

    async def decide(*args: object) -> str:
        decided.set()
        return f"answer to {args}"

    answer = held(lambda: stopping, decide)
    assert await answer("Bash") == "answer to ('Bash',)"
    stopping = True
    decided.clear()
    parked = asyncio.ensure_future(answer("Bash"))
    await asyncio.wait_for(decided.wait(), timeout=5)  # it has its answer…
    done, _ = await asyncio.wait({parked}, timeout=0.2)
    assert not done  # …and holds it: nothing returned, so nothing written
    parked.cancel()  # what the SDK's close does
    with pytest.raises(asyncio.CancelledError):
        await parked

    hooks = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[decide], timeout=5.0)]}
    wrapped = held_hooks(lambda: False, hooks)
    assert wrapped is not None
    (matcher,) = wrapped["PreToolUse"]
    assert matcher.matcher == "Bash" and matcher.timeout == 5.0
    assert matcher.on_failure == hooks["PreToolUse"][0].on_failure
    assert await matcher.hooks[0]("x") == "answer to ('x',)"
    assert held_hooks(lambda: False, None) is None


async def test_a_rule_allowing_a_whole_tool_goes_through_the_policy_not_around_it(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    # The SDK refuses to start with allowed_tools=["Read"] (the CLI would approve every
    # Read before agentdeck's policy saw it): the policy applies such a rule instead,
    # so the profile's deny rules still win over it.
    store, runner = deck
    (tmp_path / "notes.txt").write_text("NOTE-CONTENT\n")
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("KEY-CONTENT\n")
    reads = [
        {"name": "Read", "input": {"file_path": str(p)}} for p in (tmp_path / "notes.txt", secret)
    ]
    scenario = tmp_path / "reads.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {
                "name": "reads",
                "turns": [{"reply": [{"tool_use": r}]} for r in reads]
                + [{"reply": [{"text": "done"}]}],
            }
        )
    )
    deny_ssh = tmp_path / "profile.yaml"
    deny_ssh.write_text(
        yaml.safe_dump({"name": "p", "default": "deny", "deny": [f"Read(/{secret})"]})
    )
    session = await runner.start(
        AgentSpec(prompt="read", scenario=str(scenario), allow=("Read",), profile=str(deny_ssh))
    )
    await session.wait_finished(timeout=60)
    assert session.agent.state == AgentState.DONE, session.agent.last_error
    outputs = [
        e.data
        for e in await store.read(agent_id=session.agent.id)
        if e.type == EventType.TOOL_RETURNED
    ]
    assert "NOTE-CONTENT" in outputs[0]["output"] and not outputs[0]["is_error"]
    assert outputs[1]["is_error"] and "KEY-CONTENT" not in outputs[1]["output"]
