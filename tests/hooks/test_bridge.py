"""The daemon's side of the hooks, in process: a real store, the real policy
engine and memory; hook payloads shaped as Claude Code sends them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.agent import AgentSource, AgentState
from agentdeck.daemon import compose
from agentdeck.daemon.deck import Deck
from agentdeck.errors import UsageError
from agentdeck.hooks.protocol import HookReply, HookRequest
from agentdeck.settings import Settings
from tests.worktrees.conftest import git, make_repo

pytestmark = pytest.mark.anyio

SESSION = "5e55a02e-0000-4000-8000-000000000001"


@pytest.fixture
async def open_deck(settings: Settings) -> AsyncIterator[Deck]:
    # Nobody answers the approval inbox in these tests: an ask is Claude Code's soon.
    deck = await compose.open_deck(settings.model_copy(update={"hook_approval_seconds": 0.2}))
    try:
        yield deck
    finally:
        await deck.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


def hook(event: str, project: Path, session: str = SESSION, **fields: Any) -> HookRequest:
    payload = {
        "session_id": session,
        "transcript_path": f"/tmp/{session}.jsonl",
        "cwd": str(project),
        "hook_event_name": event,
        **fields,
    }
    return HookRequest(event=payload, env={"CLAUDE_PROJECT_DIR": str(project)})


def bash(command: str, use_id: str = "toolu_1") -> dict[str, Any]:
    return {"tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": use_id}


def decision(reply: HookReply) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(reply.stdout)["hookSpecificOutput"]
    return out


async def session(deck: Deck, project: Path, session: str = SESSION) -> list[HookReply]:
    """One whole session: start, prompt, a Bash call, its result, stop, end."""
    replies = []
    for request in (
        hook("SessionStart", project, session, source="startup"),
        hook("UserPromptSubmit", project, session, prompt="run the tests please"),
        hook("PreToolUse", project, session, **bash("pytest -x")),
        hook(
            "PostToolUse",
            project,
            session,
            **bash("pytest -x"),
            tool_response={"stdout": "1 failed: test_parse", "stderr": ""},
        ),
        hook("Stop", project, session, last_assistant_message="test_parse fails on empty input"),
        hook("SessionEnd", project, session, reason="other"),
    ):
        replies.append(await deck._hooks.handle(request))
    return replies


async def test_a_session_becomes_an_external_agent_with_its_story(
    open_deck: Deck, project: Path
) -> None:
    await session(open_deck, project)
    [agent] = await open_deck.list_agents()
    assert agent.source is AgentSource.EXTERNAL
    assert agent.session_id == SESSION and agent.cwd == str(project)
    assert agent.state is AgentState.DONE and agent.turns == 1
    types = [e.type for e in await open_deck.events(agent_id=agent.id)]
    for expected in (
        "agent_spawned",
        "user_message_sent",
        "tool_called",
        "tool_returned",
        "assistant_text",
        "observation_recorded",
    ):
        assert expected in types


async def test_pretooluse_enforces_deny_and_ask_rules_and_leaves_the_rest_to_claude_code(
    open_deck: Deck, project: Path
) -> None:
    await open_deck._hooks.handle(hook("SessionStart", project, source="startup"))
    # No deny or ask rule matches: no decision, Claude Code's own rules decide.
    passed = await open_deck._hooks.handle(hook("PreToolUse", project, **bash("ls -la")))
    assert passed == HookReply()
    denied = decision(
        await open_deck._hooks.handle(hook("PreToolUse", project, **bash("sudo rm -rf /", "t2")))
    )
    assert denied["permissionDecision"] == "deny"
    assert "sudo" in denied["permissionDecisionReason"]
    asked = decision(
        await open_deck._hooks.handle(hook("PreToolUse", project, **bash("git push", "t3")))
    )
    assert asked["permissionDecision"] == "ask"  # unanswered in the inbox: Claude Code's prompt
    [agent] = await open_deck.list_agents()
    events = await open_deck.events(agent_id=agent.id)
    resolved = [e.data for e in events if e.type == "permission_resolved"]
    assert [(r["request_id"], r["decision"]) for r in resolved[:1]] == [("t2", "deny")]
    assert resolved[1]["decision"] == "ask" and resolved[1]["by"] == "timeout"
    audit = await open_deck._store.read_audit(limit=10)
    assert [e.decision for e in audit] == ["deny", "ask", "expired"]


async def test_the_next_session_in_the_project_is_told_what_the_last_one_did(
    open_deck: Deck, project: Path
) -> None:
    await session(open_deck, project)
    reply = await open_deck._hooks.handle(
        hook("SessionStart", project, "second-session", source="startup")
    )
    context = json.loads(reply.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "test_parse fails on empty input" in context
    assert "pytest -x" in context
    other = project.parent / "other"
    other.mkdir()
    elsewhere = await open_deck._hooks.handle(
        hook("SessionStart", other, "third", source="startup")
    )
    assert elsewhere.stdout == "", "memory stays in its project"


async def test_a_session_in_a_linked_worktree_remembers_for_the_repository(
    open_deck: Deck, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {"pkg/mod.py": "x = 1\n"})
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "--quiet", "-b", "feature", str(linked))
    await session(open_deck, linked)
    await session(open_deck, linked / "pkg", "in-a-subdirectory")
    for where, name in ((repo, "in-the-repo"), (repo / "pkg", "in-its-subdirectory")):
        reply = await open_deck._hooks.handle(hook("SessionStart", where, name, source="startup"))
        context = json.loads(reply.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "test_parse fails on empty input" in context
    agents = {a.session_id: a for a in await open_deck._store.list_agents()}
    assert agents[SESSION].cwd == str(linked), "the board shows where it ran"


async def test_secrets_and_private_content_never_reach_memory(
    open_deck: Deck, project: Path
) -> None:
    key = "sk-ant-api03-" + "A1b2C3d4" * 10
    await open_deck._hooks.handle(hook("SessionStart", project, source="startup"))
    await open_deck._hooks.handle(
        hook(
            "PostToolUse",
            project,
            **bash(f"echo ANTHROPIC_API_KEY={key}"),
            tool_response={"stdout": f"key {key} <private>my diary</private> done", "stderr": ""},
        )
    )
    [hit] = await open_deck._memory.search("done")
    record = await open_deck._memory.get(hit.id)
    stored = json.dumps(record.__dict__, default=str)
    assert key not in stored and "my diary" not in stored
    assert "REDACTED" in stored


async def test_a_project_that_opted_out_is_not_remembered(open_deck: Deck, project: Path) -> None:
    (project / ".agentdeck").mkdir()
    (project / ".agentdeck" / "ignore").write_text("")
    await session(open_deck, project)
    (project / "backend").mkdir()
    await session(open_deck, project / "backend", "in-a-subdirectory")
    assert await open_deck._memory.stats() == {"observations": 0, "summaries": 0, "projects": 0}
    agents = await open_deck.list_agents()
    assert [a.state for a in agents] == [AgentState.DONE] * 2, "the board still shows them"


async def test_a_resumed_session_comes_back_to_the_same_agent(
    open_deck: Deck, project: Path
) -> None:
    await session(open_deck, project)
    reply = await open_deck._hooks.handle(hook("SessionStart", project, source="resume"))
    assert reply.stdout == "", "a resumed session already has its history"
    [agent] = await open_deck.list_agents()
    assert agent.state is AgentState.IDLE
    states = [
        e.data["new"]
        for e in await open_deck.events(agent_id=agent.id)
        if e.type == "state_changed"
    ]
    assert states[-2:] == ["starting", "idle"]


async def test_other_hooks_are_logged_and_bad_payloads_answered(
    open_deck: Deck, project: Path
) -> None:
    reply = await open_deck._hooks.handle(
        hook("PreCompact", project, trigger="manual", custom_instructions=None)
    )
    assert reply == HookReply()
    [agent] = await open_deck.list_agents()
    [received] = [e for e in await open_deck.events(agent_id=agent.id) if e.type == "hook_received"]
    assert received.data["hook"] == "PreCompact" and received.data["detail"]["trigger"] == "manual"
    no_session = await open_deck._hooks.handle(
        HookRequest(event={"hook_event_name": "Stop"}, env={})
    )
    assert no_session.exit == 0 and "session_id" in no_session.stderr
    weird = await open_deck._hooks.handle(hook("PreToolUse", project, tool_name=7, tool_input=[1]))
    assert weird == HookReply()  # no rule speaks of it


@pytest.fixture
def terminal_session() -> Iterator[subprocess.Popen[bytes]]:
    """A process standing in for a Claude Code session started in a terminal."""
    proc = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


async def test_hand_started_sessions_are_never_steered_or_stopped(
    open_deck: Deck, project: Path, terminal_session: subprocess.Popen[bytes]
) -> None:
    request = hook("UserPromptSubmit", project, prompt="hi")
    env = {**request.env, "CLAUDE_PID": str(terminal_session.pid)}
    await open_deck._hooks.handle(HookRequest(event=request.event, env=env))
    [agent] = await open_deck.list_agents()
    for steer in (open_deck.kill, open_deck.interrupt):
        with pytest.raises(UsageError, match="hand-started"):
            await steer(agent.id)
    with pytest.raises(UsageError, match="hand-started"):
        await open_deck.send(agent.id, "hello")
    await open_deck.reconcile()
    assert terminal_session.poll() is None, "a daemon restart never stops the user's session"
    assert (await open_deck.get_agent(agent.id)).state is AgentState.RUNNING
    terminal_session.kill()
    terminal_session.wait()
    await open_deck.reconcile()
    assert (await open_deck.get_agent(agent.id)).state is AgentState.DONE


async def test_a_permission_prompt_in_the_terminal_shows_as_awaiting_permission(
    open_deck: Deck, project: Path
) -> None:
    await open_deck._hooks.handle(hook("PreToolUse", project, **bash("git push")))
    await open_deck._hooks.handle(
        hook(
            "Notification",
            project,
            message="Claude needs your permission to use Bash",
            notification_type="permission_prompt",
        )
    )
    [agent] = await open_deck.list_agents()
    assert agent.state is AgentState.AWAITING_PERMISSION
    await open_deck._hooks.handle(
        hook("PostToolUse", project, **bash("git push"), tool_response={"stdout": "ok"})
    )
    assert (await open_deck.get_agent(agent.id)).state is AgentState.RUNNING


async def test_a_session_first_seen_without_a_directory_gets_it_later(
    open_deck: Deck, project: Path
) -> None:
    await open_deck._hooks.handle(
        HookRequest(
            event={"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "hi"},
            env={},
        )
    )
    reply = await open_deck._hooks.handle(hook("PreToolUse", project, **bash("sudo ls")))
    assert decision(reply)["permissionDecision"] == "deny"
    [agent] = await open_deck.list_agents()
    assert agent.cwd == str(project)


async def test_the_event_log_keeps_no_secret_of_a_hand_started_session(
    open_deck: Deck, project: Path
) -> None:
    key = "ghp_" + "Zx9" * 12
    for request in (
        hook("UserPromptSubmit", project, prompt=f"use {key} <private>my diary</private>"),
        hook("PreToolUse", project, **bash(f"GITHUB_TOKEN={key} gh pr list")),
        hook(
            "PostToolUse",
            project,
            **bash(f"GITHUB_TOKEN={key} gh pr list"),
            tool_response={"stdout": f"token {key}", "stderr": ""},
        ),
        hook("Stop", project, last_assistant_message=f"done with {key}"),
    ):
        await open_deck._hooks.handle(request)
    [agent] = await open_deck.list_agents()
    log = json.dumps([e.data for e in await open_deck.events(agent_id=agent.id)])
    assert key not in log and "my diary" not in log
    assert "gh pr list" in log, "the rest is kept"


async def test_a_multibyte_output_is_cut_to_the_byte_limit(
    open_deck: Deck, project: Path, settings: Settings
) -> None:
    big = "é" * settings.tool_output_limit  # two bytes each: twice the limit
    await open_deck._hooks.handle(
        hook("PostToolUse", project, **bash("cat big"), tool_response={"stdout": big})
    )
    [agent] = await open_deck.list_agents()
    [returned] = [e for e in await open_deck.events(agent_id=agent.id) if e.type == "tool_returned"]
    assert len(returned.data["output"].encode()) <= settings.tool_output_limit
    assert returned.data["truncated"] and returned.data["size"] == 2 * settings.tool_output_limit
