"""Policy what-if on history: the log's calls re-decided under a candidate profile.

A real scripted run (the real Claude Code CLI, the scripted model) records allowed,
denied and asked calls; a hand-written history through the store API checks the
grouping, the filters and what cannot be re-decided, call by call.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState
from agentdeck.core.approvals import Approval
from agentdeck.core.events import (
    Event,
    PermissionRequested,
    PermissionResolved,
    ToolCalled,
    ToolReturned,
)
from agentdeck.core.policy_replay import PolicyReplay, shown
from agentdeck.errors import NotFound, PolicyError, UsageError
from agentdeck.governance.replay import (
    NO_ROW,
    ReplayQuery,
    candidate_profile,
    replay,
)
from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio]

STRICT = """
name: stricter
default: deny
allow: ["Read", "Bash(ls:*)"]
ask: ["Bash(touch:*)"]
deny: ["Bash(echo:*)"]
"""


def changes(report: PolicyReplay) -> dict[tuple[str, str | None], int]:
    return {(g.change, g.rule): g.count for g in report.groups}


# -- a real run -----------------------------------------------------------------------


@pytest.mark.cli
async def test_a_recorded_run_replayed_under_a_stricter_profile(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    store, runner = deck
    profile = tmp_path / "then.yaml"
    profile.write_text(
        yaml.safe_dump({
            "name": "then", "default": "ask", "approval_timeout_seconds": 60,
            "allow": ["Read", "Bash(echo:*)", "Bash(ls:*)"], "deny": ["Bash(rm:*)"],
        })
    )  # fmt: skip
    turns: list[dict[str, Any]] = [
        {"reply": [{"tool_use": {"name": "Bash", "input": {"command": c}}}]}
        for c in ("echo hi", "ls", "rm keep.txt", "touch made.txt")
    ]
    turns.append({"reply": [{"text": "Done."}]})
    scenario = tmp_path / "script.yaml"
    scenario.write_text(yaml.safe_dump({"name": "s", "workspace": {"files": {"keep.txt": "x"}},
                                        "turns": turns}))  # fmt: skip
    session = await runner.start(
        AgentSpec(prompt="go", scenario=str(scenario), profile=str(profile))
    )

    async def pending() -> list[Approval]:
        return await runner.governor.approvals.list_approvals()

    (approval,) = await eventually(pending, timeout=60, what="the touch asked about")
    await runner.governor.answer(approval.id, "allow", by="user:test")
    await session.wait_finished(timeout=60)

    stricter = await replay(store, settings, candidate_profile("s.yaml", STRICT), ReplayQuery())
    assert (stricter.calls, stricter.redecided) == (4, 4)
    # echo: allowed then, denied now; touch: asked then and now; ls allowed, rm denied
    assert changes(stricter) == {("allow→deny", "Bash(echo:*)"): 1}
    assert stricter.unchanged == 3 and stricter.profile == "stricter"
    (group,) = stricter.groups
    (example,) = group.examples
    # The profile in force then, as shown (cut at 80 characters: a deep temporary
    # directory, as under several test workers, is cut before its file name).
    assert (
        example.tool == "Bash"
        and "echo hi" in example.input
        and example.profile == shown(str(tmp_path / "then.yaml"), 80)
    )

    loose = await replay(store, settings, candidate_profile("permissive"), ReplayQuery())
    moved = {g.change for g in loose.groups}
    assert {"deny→allow", "ask→allow"} <= moved
    asked = next(g for g in loose.groups if g.change == "ask→allow")
    assert asked.examples[0].answered == "allow by user:test"


# -- a history written through the store API -------------------------------------------


def agent_row(agent_id: str, cwd: str, **spec: Any) -> Agent:
    now = time.time()
    return Agent(
        id=agent_id,
        name=agent_id,
        state=AgentState.DONE,
        spec=AgentSpec(prompt="p", **spec),
        cwd=cwd,
        created_at=now,
        updated_at=now,
        source=AgentSource.AGENTDECK,
    )


def call(agent: str, use: str, command: str, ts: float | None = None) -> list[Event]:
    ts = time.time() if ts is None else ts
    return [
        ToolCalled(agent_id=agent, ts=ts, tool_use_id=use, tool="Bash", input={"command": command}),
        ToolReturned(agent_id=agent, ts=ts, tool_use_id=use, output="ok"),
    ]


def denied(agent: str, use: str, command: str, rule: str) -> list[Event]:
    now, tool_input = time.time(), {"command": command}
    return [
        ToolCalled(agent_id=agent, ts=now, tool_use_id=use, tool="Bash", input=tool_input),
        PermissionResolved(
            agent_id=agent, ts=now, request_id=use, decision="deny", reason="r", rule=rule,
            by="policy",
        ),
        ToolReturned(agent_id=agent, ts=now, tool_use_id=use, output="denied", is_error=True),
    ]  # fmt: skip


def asked(agent: str, use: str, command: str, answer: str) -> list[Event]:
    now, tool_input = time.time(), {"command": command}
    request = f"ap{use}"
    return [
        ToolCalled(agent_id=agent, ts=now, tool_use_id=use, tool="Bash", input=tool_input),
        PermissionRequested(
            agent_id=agent, ts=now, request_id=request, tool="Bash", input=tool_input, reason="r"
        ),
        PermissionResolved(
            agent_id=agent, ts=now, request_id=request, decision=answer, reason="r", by="user:x"
        ),
        ToolReturned(agent_id=agent, ts=now, tool_use_id=use, output="ok"),
    ]


@pytest.fixture(params=["sqlite", "postgres"])
async def history(
    settings: Settings, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Store]:
    """Two projects: ``a1`` (in /p1, profile default) and ``b1`` (in /p2, profile
    permissive); an agent whose row was removed; a call a week old. On SQLite and
    on PostgreSQL (a fresh database on the private cluster)."""
    settings.ensure_home()
    target = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    store = Store.open(target or settings.db_path)
    p1, p2 = tmp_path / "p1", tmp_path / "p2"
    p1.mkdir(), p2.mkdir()
    await store.save_agent(agent_row("a1", str(p1), project=str(p1)))
    await store.save_agent(agent_row("b1", str(p2), profile="permissive"))
    week_ago = time.time() - 7 * 86400
    events: list[Event] = [
        *call("a1", "t1", "echo one", ts=week_ago),
        *call("a1", "t2", "echo two"),
        *call("a1", "t3", "ls"),
        *denied("a1", "t4", "rm -rf build", "Bash(rm:*)"),
        *asked("a1", "t5", "touch x", "allow"),
        *call("b1", "u1", "echo three"),
        *asked("b1", "u2", "touch y", "deny"),
        *call("gone", "g1", "echo lost"),
    ]
    await store.append(events)
    try:
        yield store
    finally:
        await store.close()


async def test_changes_are_grouped_by_the_rule_that_decides_now(
    history: Store, settings: Settings
) -> None:
    report = await replay(history, settings, candidate_profile("s.yaml", STRICT), ReplayQuery())
    assert report.calls == 8 and report.redecided == 7
    assert dict(report.undecided) == {NO_ROW: 1}
    # echo one, two, three: allowed then, denied now
    assert changes(report) == {("allow→deny", "Bash(echo:*)"): 3}
    # ls allowed both times; rm denied then and by the default now; touch asked both times
    assert report.unchanged == 4  # ls, rm, touch x, touch y
    first = report.groups[0]
    assert first.change == "allow→deny" and len(first.examples) == 3
    assert all(e.reason for e in first.examples)


async def test_a_looser_profile_lists_what_it_would_let_through(
    history: Store, settings: Settings
) -> None:
    report = await replay(history, settings, candidate_profile("permissive"), ReplayQuery())
    got = changes(report)
    assert sum(n for (change, _), n in got.items() if change == "deny→allow") == 1
    assert sum(n for (change, _), n in got.items() if change == "ask→allow") == 2
    answered = sorted(
        e.answered or "" for g in report.groups if g.change == "ask→allow" for e in g.examples
    )
    assert answered == ["allow by user:x", "deny by user:x"]


async def test_since_agent_and_project_narrow_the_history(
    history: Store, settings: Settings, tmp_path: Path
) -> None:
    strict = candidate_profile("s.yaml", STRICT)
    recent = await replay(history, settings, strict, ReplayQuery(since_seconds=86400))
    assert recent.calls == 7 and changes(recent)[("allow→deny", "Bash(echo:*)")] == 2
    one = await replay(history, settings, strict, ReplayQuery(agent="b1"))
    assert one.agent_id == "b1" and one.calls == 2
    assert changes(one) == {("allow→deny", "Bash(echo:*)"): 1}
    p1 = await replay(history, settings, strict, ReplayQuery(project=str(tmp_path / "p1")))
    assert p1.calls == 5 and p1.project == str(tmp_path / "p1")
    with pytest.raises(NotFound):
        await replay(history, settings, strict, ReplayQuery(agent="nobody-here"))
    with pytest.raises(UsageError):
        await replay(history, settings, strict, ReplayQuery(agent="b1", project="/p"))
    with pytest.raises(UsageError):
        await replay(history, settings, strict, ReplayQuery(since_seconds=-1))


async def test_the_json_shape_round_trips(history: Store, settings: Settings) -> None:
    report = await replay(history, settings, candidate_profile("strict"), ReplayQuery())
    data = report.to_dict()
    assert set(data) == {
        "profile", "profile_source", "since", "agent_id", "project", "events", "calls",
        "redecided", "changed", "unchanged", "groups", "undecided", "notes",
    }  # fmt: skip
    group = data["groups"][0]
    assert set(group) == {"change", "before", "after", "rule", "source", "count", "examples"}
    assert set(group["examples"][0]) == {
        "event_id", "agent_id", "ts", "tool", "input", "profile", "answered", "reason",
    }  # fmt: skip
    assert PolicyReplay.from_dict(data) == report
    assert (
        data["changed"] + data["unchanged"] + sum(u["count"] for u in data["undecided"])
        == (data["calls"])
    )


async def test_an_unknown_or_malformed_profile_is_a_clear_error() -> None:
    with pytest.raises(PolicyError, match="no such profile"):
        candidate_profile("no-such-profile")
    with pytest.raises(PolicyError, match="send the file"):
        candidate_profile("/etc/passwd")
    with pytest.raises(PolicyError, match="invalid YAML"):
        candidate_profile("bad.yaml", "allow: [unclosed")
    with pytest.raises(UsageError):
        candidate_profile("")


async def test_hostile_inputs_are_data_cut_short_and_escaped(
    settings: Settings, tmp_path: Path
) -> None:
    settings.ensure_home()
    async with Store.open(settings.db_path) as store:
        await store.save_agent(agent_row("h1", str(tmp_path)))
        huge = "echo " + "A" * 100_000 + " \x1b[2J\x9b31m \u202e {{7*7}} $(reboot)"
        await store.append([
            *call("h1", "x1", huge),
            ToolCalled(agent_id="h1", ts=time.time(), tool_use_id="x2", tool="Bash",
                       input={"command": "echo", "password": "hunter2-secret"}),
        ])  # fmt: skip
        report = await replay(store, settings, candidate_profile("s.yaml", STRICT), ReplayQuery())
    assert report.changed == 2  # both denied now; the command substitution by the default
    examples = [e for g in report.groups for e in g.examples]
    assert len(examples) == 2
    for example in examples:
        assert len(example.input) <= 241 and len(example.reason) <= 241
        assert not any(c in example.input + example.reason for c in "\x1b\x9b\u202e")
    assert not any("hunter2-secret" in e.input for e in examples)


async def test_a_hand_started_sessions_calls_are_judged_as_its_hook_would(
    settings: Settings, tmp_path: Path
) -> None:
    """Under ``deny-and-ask`` the hook speaks only for deny and ask rules: a call
    no such rule names is left to Claude Code's own rules (shown as allow)."""
    settings.ensure_home()
    async with Store.open(settings.db_path) as store:
        hand = agent_row("h1", str(tmp_path))
        await store.save_agent(dataclasses.replace(hand, source=AgentSource.EXTERNAL))
        await store.append([*call("h1", "k1", "echo hi"), *call("h1", "k2", "make build")])
        report = await replay(store, settings, candidate_profile("s.yaml", STRICT), ReplayQuery())
    assert (report.calls, report.changed, report.unchanged) == (2, 1, 1)
    (group,) = report.groups
    assert (group.change, group.rule) == ("allow→deny", "Bash(echo:*)")
