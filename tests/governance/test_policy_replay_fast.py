"""``policy replay``'s fast path (the log read as rows along its primary key, a
tool's output not read, verdicts remembered per agent, tool and input) gives the
report the plain path gives (every event read with ``Store.read``, every call
judged by the engine afresh), on a mixed history, on SQLite and PostgreSQL."""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState
from agentdeck.core.events import (
    AssistantText,
    Event,
    PermissionRequested,
    PermissionResolved,
    ToolCalled,
    ToolReturned,
)
from agentdeck.core.policy import Profile, Verdict
from agentdeck.core.policy_replay import TYPES, CallLedger, PolicyReplay
from agentdeck.errors import PolicyError
from agentdeck.governance.replay import Replayer, ReplayQuery, candidate_profile, replay
from agentdeck.settings import Settings
from agentdeck.store.store import Store

pytestmark = [pytest.mark.anyio]

CANDIDATE = """
name: candidate
default: deny
allow: ["Read(/**)", "Bash(ls:*)", "Bash(git status:*)", "WebFetch(domain:docs.python.org)"]
ask: ["Bash(touch:*)", "Edit(/src/**)"]
deny: ["Bash(echo:*)", "Bash(rm:*)", "Read(~/.ssh/**)", "Bash(*.ssh/*)"]
"""
COMMANDS = [
    "ls -la", "git status", "echo hi", "rm -rf build", "touch x", "pytest -q",
    "ls | grep x", "echo 'a b' && ls", "cat ~/.ssh/id_rsa", "FOO=1 ls", "bash -c 'echo x'",
    "ls $HOME", "for x in a; do ls; done", "",
]  # fmt: skip


def agent_row(agent_id: str, cwd: str, **fields: Any) -> Agent:
    now = time.time()
    spec = fields.pop("spec", {})
    return Agent(
        id=agent_id, name=agent_id, state=AgentState.DONE, spec=AgentSpec(prompt="p", **spec),
        cwd=cwd, created_at=now, updated_at=now, source=fields.pop("source", AgentSource.AGENTDECK),
        **fields,
    )  # fmt: skip


def call_input(rng: random.Random, cwd: str) -> tuple[str, Any]:
    kind = rng.random()
    if kind < 0.45:
        return "Bash", {"command": rng.choice(COMMANDS), "description": "d"}
    path = rng.choice(["src/a.py", "README.md", "~/.ssh/id_rsa", f"src/m{rng.randrange(9)}.py"])
    full = path if path.startswith("~") else f"{cwd}/{path}"
    if kind < 0.6:
        return "Read", {"file_path": full, "limit": rng.choice([10, 10.0, True, None])}
    if kind < 0.7:
        return "Edit", {"file_path": full, "old_string": "a", "new_string": "b"}
    if kind < 0.78:
        return "Grep", {"pattern": "x", "path": rng.choice([cwd, "~", "/"])}
    if kind < 0.85:
        return "WebFetch", {"url": rng.choice(["https://docs.python.org/3/", "https://x.io/"])}
    if kind < 0.9:
        return "Bash", ["not", "an", "object"]
    return "mcp__srv__tool", {"q": "é" * rng.randrange(1, 1500)}  # past what is remembered


def mixed_history(cwds: dict[str, str], calls: int) -> list[Event]:
    rng = random.Random(7)
    now = time.time()
    events: list[Event] = []
    for n in range(calls):
        agent = rng.choice([*cwds, "gone"])
        tool, tool_input = call_input(rng, cwds.get(agent, "/nowhere"))
        use, ts = f"toolu_{n}", now - (calls - n)
        fate = rng.random()
        if fate < 0.05:  # asked before the call was seen (an orphan request)
            events.append(PermissionRequested(agent_id=agent, ts=ts, request_id=f"ap{n}",
                                              tool=tool, input=tool_input, reason="r"))  # fmt: skip
        events.append(ToolCalled(agent_id=agent, ts=ts, tool_use_id=use, tool=tool,
                                 input=tool_input))  # fmt: skip
        if rng.random() < 0.3:
            events.append(AssistantText(agent_id=agent, ts=ts, text="thinking " * 50))
        if 0.05 <= fate < 0.12:
            events.append(PermissionResolved(agent_id=agent, ts=ts, request_id=use,
                                             decision="deny", reason="r", rule="Bash(rm:*)",
                                             by="policy"))  # fmt: skip
            continue
        if 0.12 <= fate < 0.2:
            events.append(PermissionRequested(agent_id=agent, ts=ts, request_id=f"ap{n}",
                                              tool=tool, input=tool_input, reason="r"))  # fmt: skip
        if fate < 0.05 or 0.12 <= fate < 0.2:
            events.append(PermissionResolved(agent_id=agent, ts=ts, request_id=f"ap{n}",
                                             decision=rng.choice(["allow", "deny"]), reason="r",
                                             by="user:x"))  # fmt: skip
        if fate < 0.95:  # the rest never ends (the agent was stopped)
            output = "x" * rng.choice([2, 3000])
            events.append(ToolReturned(agent_id=agent, ts=ts, tool_use_id=use, output=output))
    return events


@pytest.fixture(params=["sqlite", "postgres"])
async def history(
    settings: Settings, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Store]:
    settings.ensure_home()
    target = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    store = Store.open(target or settings.db_path)
    cwds = {a: str(tmp_path / a) for a in ("a1", "a2", "kid", "hand", "nocwd")}
    await store.save_agent(agent_row("a1", cwds["a1"]))
    spec = {"profile": "permissive", "allow": ["Bash(pytest:*)"]}
    await store.save_agent(agent_row("a2", cwds["a2"], spec=spec))
    await store.save_agent(agent_row("kid", cwds["kid"], parent_id="a1",
                                     spec={"tools": ["Bash", "Read"]}))  # fmt: skip
    await store.save_agent(agent_row("hand", cwds["hand"], source=AgentSource.EXTERNAL))
    await store.save_agent(agent_row("nocwd", "relative/dir"))
    events = mixed_history(cwds, 700)
    for start in range(0, len(events), 500):
        await store.append(events[start : start + 500])
    try:
        yield store
    finally:
        await store.close()


class PlainReplayer(Replayer):
    """Every call judged by the engine afresh: nothing remembered."""

    async def remembered(self, agent: Agent, tool: str, tool_input: Any) -> Verdict | None:
        try:
            return await self.verdict(agent, tool, tool_input)
        except (PolicyError, ValueError, TypeError, RecursionError):
            return None


async def plain_replay(store: Store, settings: Settings, candidate: Profile) -> PolicyReplay:
    """The plain path: every event of the log read with ``Store.read``, in small pages."""
    replayer, ledger = PlainReplayer(store, settings, candidate), CallLedger()
    after = 0
    while page := await store.read(after=after, limit=37):
        for event in page:
            if event.type in TYPES:
                replayer.tally.events += 1
                for call in ledger.feed(event):
                    await replayer.judge(call)
        after = page[-1].id
    for call in ledger.flush():
        await replayer.judge(call)
    return replayer.tally.report(
        profile="candidate", profile_source="", since=None, agent_id=None, project=None
    )


def summary(report: PolicyReplay) -> dict[str, Any]:
    shape = report.to_dict()
    return {k: shape[k] for k in ("events", "calls", "changed", "unchanged", "groups", "undecided")}


async def test_the_fast_path_reports_what_the_plain_path_reports(
    history: Store, settings: Settings
) -> None:
    candidate = candidate_profile("c.yaml", CANDIDATE)
    fast = await replay(history, settings, candidate, ReplayQuery())
    plain = await plain_replay(history, settings, candidate)
    assert summary(fast) == summary(plain)
    # The history holds what the fast path takes short cuts over, and what it cannot.
    assert fast.calls == 700 and fast.changed > 50 and fast.unchanged > 50
    assert {why for why, _ in fast.undecided} >= {
        "its input was not recorded as a JSON object",
        "its agent is no longer in the deck: no workspace to judge paths in",
        "its agent's row records no absolute workspace to judge paths in",
    }
    assert {g.before for g in fast.groups} >= {"allow", "ask", "deny"}
