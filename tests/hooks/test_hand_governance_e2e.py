"""What the installed hooks decide in a session started by hand, end to end: the
real Claude Code CLI (``claude -p`` with the hooks by ``--settings``), the real
hook client and socket, the real daemon (bridge, policy, approval inbox, store)
and the scripted model.

By default the hook enforces the profile's deny and ask rules only and leaves
every other call to Claude Code's own rules (``--allowedTools``); a call the
profile asks about waits in the deck's approval inbox, then Claude Code asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.approvals import Approval, ApprovalState
from agentdeck.daemon.deck import Deck
from agentdeck.settings import Settings
from tests.hooks.test_bridge_e2e import (
    claude_p,
    external_agent,
    profile_file,
    running_daemon,
)
from tests.support.mockmodel import running_mock
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

MEM = "mem-search"
PUSH = "push"


def scenario(tmp_path: Path, name: str, tool: str, tool_input: dict[str, Any]) -> Path:
    script = {
        "name": name,
        "turns": [
            {"reply": [{"tool_use": {"name": tool, "input": tool_input}}]},
            {"reply": [{"text": f"{name.upper()}-DONE"}]},
        ],
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(script))
    return path


def mcp_config(tmp_path: Path, settings: Settings) -> Path:
    """agentdeck's own memory server as ``mem``, as the README suggests adding it."""
    path = tmp_path / "mcp.json"
    server = {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "agentdeck", "mcp"],
        "env": {"AGENTDECK_HOME": str(settings.home)},
    }
    path.write_text(json.dumps({"mcpServers": {"mem": server}}))
    return path


def tool_results(run: Any) -> list[dict[str, Any]]:
    return [
        block
        for line in run.of_type("user")
        for block in line["message"]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


async def permission_events(deck: Deck) -> list[Any] | None:
    agents = await external_agent(deck)
    if not agents:
        return None
    events = await deck.events(agent_id=agents[0].id)
    kinds = ("permission_requested", "permission_resolved")
    return [e for e in events if e.type in kinds] or None


@contextlib.asynccontextmanager
async def memory_session(settings: Settings, tmp_path: Path) -> AsyncIterator[tuple[Any, Deck]]:
    """A session whose one call searches the memory server, which the user's own
    rules allow (``--allowedTools 'mcp__mem__*'``); the deck still running."""
    project = tmp_path / "project"
    project.mkdir()
    script = scenario(tmp_path, MEM, "mcp__mem__memory_search", {"query": "calc"})
    async with running_mock(script) as mm, running_daemon(settings) as deck:
        run = await claude_p(
            "search memory",
            settings,
            tmp_path,
            project=project,
            url=mm.url_for(MEM),
            allow="mcp__mem__*",
            extra=["--mcp-config", str(mcp_config(tmp_path, settings))],
        )
        yield run, deck


async def test_the_users_own_allow_rule_for_the_memory_server_is_not_overridden(
    settings: Settings, tmp_path: Path
) -> None:
    """``--allowedTools 'mcp__mem__*'`` got "no rule allows …; defaults to ask"
    from the hook, and ``-p`` turned that ask into a denial."""
    async with memory_session(settings, tmp_path) as (run, deck):
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.result.get("permission_denials") == []
        [result] = tool_results(run)
        assert not result.get("is_error"), result
        assert run.result["result"] == "MEM-SEARCH-DONE"
        [agent] = await eventually(lambda: external_agent(deck))
        events = await deck.events(agent_id=agent.id)
        assert [e.data["tool"] for e in events if e.type == "tool_called"] == [
            "mcp__mem__memory_search"
        ]
        assert not [e for e in events if e.type.startswith("permission_")]
        assert await deck.approvals() == []


async def test_a_deny_rule_still_stops_a_call_the_user_allows(
    settings: Settings, tmp_path: Path
) -> None:
    profile = profile_file(tmp_path, name="no-mem", deny=["mcp__mem"])
    settings = settings.model_copy(update={"profile": profile})
    async with memory_session(settings, tmp_path) as (run, deck):
        [denial] = run.result.get("permission_denials") or [None]
        assert denial and denial["tool_name"] == "mcp__mem__memory_search"
        [resolved] = await eventually(lambda: permission_events(deck))
        assert resolved.data["decision"] == "deny" and resolved.data["rule"] == "mcp__mem"


@dataclass
class Asked:
    run: Any
    events: list[Any]  # the session's permission events
    approvals: list[Approval]
    audit: list[str]  # the decisions, oldest first


async def ask_session(settings: Settings, tmp_path: Path, answer: str | None) -> Asked:
    """A session whose one call (``git push``) the default profile asks about;
    ``answer`` it from the inbox as soon as it is there (or never)."""
    project = tmp_path / "project"
    project.mkdir()
    script = scenario(tmp_path, PUSH, "Bash", {"command": "git push", "description": "push"})
    async with running_mock(script) as mm, running_daemon(settings) as deck:

        async def answered() -> None:
            if answer is None:
                return
            [pending] = await eventually(
                lambda: deck.approvals(states=[ApprovalState.PENDING]),
                # Claude Code's start and first request come first: 30 s ran out once
                # on a loaded 2-core CI machine (9 s here unloaded).
                timeout=120,
                what="the hook's request in the approval inbox",
            )
            await deck.answer(pending.id, answer, by="user:cli")

        run, _ = await asyncio.gather(
            claude_p(
                "push it",
                settings,
                tmp_path,
                project=project,
                url=mm.url_for(PUSH),
            ),
            answered(),
        )
        events = await eventually(
            lambda: _resolved(deck), what="the decision recorded on the session's agent"
        )
        audit = [str(e.decision) for e in await deck._store.read_audit(limit=10)]
        return Asked(run, events, await deck.approvals(), audit)


async def _resolved(deck: Deck) -> list[Any] | None:
    events = await permission_events(deck)
    return events if events and events[-1].type == "permission_resolved" else None


async def test_an_ask_reaches_the_approval_inbox_and_a_denial_there_stops_the_call(
    settings: Settings, tmp_path: Path
) -> None:
    asked = await ask_session(settings, tmp_path, "deny")
    [denial] = asked.run.result.get("permission_denials") or [None]
    assert denial and denial["tool_name"] == "Bash"
    assert "denied by user:cli" in json.dumps(tool_results(asked.run))
    requested, resolved = asked.events
    assert requested.type == "permission_requested" and requested.data["tool"] == "Bash"
    assert resolved.data["request_id"] == requested.data["request_id"]
    assert (resolved.data["decision"], resolved.data["by"]) == ("deny", "user:cli")
    [approval] = asked.approvals
    assert approval.state is ApprovalState.DENIED and approval.id == requested.data["request_id"]
    assert asked.audit == ["ask", "denied"]


async def test_an_ask_approved_in_the_inbox_runs(settings: Settings, tmp_path: Path) -> None:
    asked = await ask_session(settings, tmp_path, "allow")
    assert asked.run.result.get("permission_denials") == []
    [result] = tool_results(asked.run)
    assert "git" in json.dumps(result)  # git ran (and said there is no repository)
    resolved = [e.data for e in asked.events if e.type == "permission_resolved"]
    assert [(r["decision"], r["by"]) for r in resolved] == [("allow", "user:cli")]
    [approval] = asked.approvals
    assert approval.state is ApprovalState.ALLOWED
    assert asked.audit == ["ask", "allowed"]


async def test_an_ask_nobody_answers_becomes_claude_codes_own_prompt(
    settings: Settings, tmp_path: Path
) -> None:
    settings = settings.model_copy(update={"hook_approval_seconds": 1.0})
    asked = await ask_session(settings, tmp_path, None)
    # -p has nobody to prompt: Claude Code denies an "ask" itself.
    [denial] = asked.run.result.get("permission_denials") or [None]
    assert denial and denial["tool_name"] == "Bash"
    resolved = asked.events[-1].data
    assert (resolved["decision"], resolved["by"]) == ("ask", "timeout")
    [approval] = asked.approvals
    assert approval.state is ApprovalState.EXPIRED
    assert asked.audit == ["ask", "expired"]
