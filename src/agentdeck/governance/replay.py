"""Policy what-if on history: re-decide the event log's tool calls under a
candidate profile with the governor's own engine (``Governor.verdict``, the hook's
``hand_verdict`` for sessions started by hand), and count what would change
(``core.policy_replay`` rebuilds the calls and tallies them).

The log is read in pages of ids up to the last id when the replay starts, so a
log of millions of events costs bounded memory, and a live deck adds nothing
to a replay under way. The context a decision needs and the log lacks (the
agent's workspace, its profile, its parents, its template's tools) comes from
the agent's row; a call whose row or workspace is gone is counted as not
re-decided, with why.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agentdeck.core.agent import Agent, AgentSource
from agentdeck.core.event_types import StoredEvent
from agentdeck.core.policy import Decision, Grant, Profile, Verdict
from agentdeck.core.policy_hand import HookGovernance, hand_verdict
from agentdeck.core.policy_replay import (
    BRIEF,
    MAX_PROFILE_TEXT,
    TYPES,
    CallLedger,
    PolicyReplay,
    RecordedCall,
    ReplayTally,
)
from agentdeck.core.profile_ref import names_a_file
from agentdeck.errors import NotFound, PolicyError, UsageError
from agentdeck.governance.governor import Governor
from agentdeck.governance.profiles import (
    guarded,
    load_profile,
    profile_from_settings_json,
    profile_from_yaml,
)
from agentdeck.settings import Settings
from agentdeck.store.scan import EventRow
from agentdeck.store.store import Store

T = TypeVar("T")
PAGE = 2000  # events per read
YIELD_EVERY = 64  # calls judged between two turns given to the loop's other tasks
KEEP = 4096  # agents (and their grants, ancestors) kept while replaying
# Verdicts kept, by agent, tool and input (least recently used out), for inputs up to
# MEMO_INPUT characters of JSON: at most some 32 MB, whatever the model wrote.
MEMO = 16_384
MEMO_INPUT = 1024
MAX_SINCE_SECONDS = 10 * 366 * 86400
NO_ROW = "its agent is no longer in the deck: no workspace to judge paths in"
NO_CWD = "its agent's row records no absolute workspace to judge paths in"
NO_INPUT = "its input was not recorded as a JSON object"
NO_TOOL = "the event names no tool"
UNJUDGED = "the policy engine refused the call's input"
LEFT_TO_CLAUDE = "left to Claude Code's own rules (a session started by hand)"
_UNSEEN: Any = object()  # not in a cache (None is a value there)
# An agent's own rule (``agent:<id>``) is grouped with every other agent's of that
# text, not one group per agent; its examples' reasons name the agent.
OWN_RULES = "agent:(own rules)"
_AGENT_SOURCE = re.compile(r"\bagent:[^ ]+")


@dataclass(frozen=True)
class ReplayQuery:
    """What to replay: the history's window and whose calls."""

    since_seconds: float | None = None
    agent: str | None = None
    project: str | None = None


def candidate_profile(name: str, text: str | None = None) -> Profile:
    """The candidate: a built-in profile by ``name``, or a profile's ``text`` the
    caller read (YAML, or a Claude Code settings.json when ``name`` ends so).
    ``PolicyError`` for an unknown name or a malformed profile."""
    if not name or "\x00" in name:
        raise UsageError("a policy replay needs a profile: a built-in name or a file")
    if text is None:
        if names_a_file(name):
            # The deck reads no file for a caller: the caller sends what it holds.
            raise PolicyError(name, "not a built-in profile; send the file's text")
        return load_profile(name)
    if len(text) > MAX_PROFILE_TEXT:
        raise UsageError(f"a profile is at most {MAX_PROFILE_TEXT // 1024} KB of text")
    if name.endswith(".json"):
        return profile_from_settings_json(text, name)
    return profile_from_yaml(text, name)


class WhatIf(Governor):
    """The governor with the candidate standing for every profile an agent or its
    parents name; the agents' own rules, template tools and the deck's secrets as
    the governor adds them. Grants, agents and ancestors are looked up once."""

    def __init__(self, store: Store, settings: Settings, candidate: Profile) -> None:
        super().__init__(store, settings)
        self.candidate = guarded(candidate, settings)
        self._grants: OrderedDict[str, list[Grant]] = OrderedDict()
        self._lineage: OrderedDict[str, list[Agent]] = OrderedDict()
        self._own: OrderedDict[str, Profile] = OrderedDict()
        self._shapes: dict[tuple[tuple[int, ...], ...], Profile] = {}

    def profile_named(self, name: str | None = None) -> Profile:
        return self.candidate

    def own_profile(
        self, agent: Agent, *, tools: bool = True, deck: bool | None = None, rules: bool = True
    ) -> Profile:
        # One object per agent and view: the engine keeps a profile's rules by tool
        # for as long as the object lives (``core.policy``), so a replay reuses them.
        key = f"{agent.id}/{tools}/{deck}/{rules}"
        found = _cached(self._own, key)
        if found is None:
            made = super().own_profile(agent, tools=tools, deck=deck, rules=rules)
            # Agents with no rules of their own get equal profiles: one object for all.
            shape = tuple(
                tuple(map(id, rules or ()))
                for rules in (made.allow, made.deny, made.ask, made.enabled_tools)
            )
            same = self._shapes.get(shape)
            found = _keep(self._own, key, same if same is not None and same == made else made)
            if same is None and len(self._shapes) < KEEP:
                self._shapes[shape] = made
        return found

    async def grants(self, agent: Agent) -> list[Grant]:
        found = _cached(self._grants, agent.id)
        if found is None:
            found = _keep(self._grants, agent.id, await super().grants(agent))
        return found

    async def ancestors(self, agent: Agent) -> list[Agent]:
        found = _cached(self._lineage, agent.id)
        if found is None:
            found = _keep(self._lineage, agent.id, await super().ancestors(agent))
        return found


def _cached(cache: OrderedDict[str, T], key: str) -> T | None:
    found = cache.get(key)
    if found is not None:
        cache.move_to_end(key)
    return found


def _keep(cache: OrderedDict[str, T], key: str, value: T) -> T:
    cache[key] = value
    while len(cache) > KEEP:
        cache.popitem(last=False)
    return value


class Replayer:
    def __init__(self, store: Store, settings: Settings, candidate: Profile) -> None:
        self.store = store
        self.settings = settings
        self.whatif = WhatIf(store, settings, candidate)
        self.hook = HookGovernance(settings.hook_governance)
        self.home = str(Path.home())
        self._agents: OrderedDict[str, Agent | None] = OrderedDict()
        self.tally = ReplayTally()
        self._memo: OrderedDict[tuple[str, str, Hashable], Verdict | None] = OrderedDict()

    async def agent(self, agent_id: str) -> Agent | None:
        if agent_id in self._agents:
            self._agents.move_to_end(agent_id)
            return self._agents[agent_id]
        try:
            found: Agent | None = await self.store.get_agent(agent_id)
        except NotFound:
            found = None
        return _keep(self._agents, agent_id, found)

    async def judge(self, call: RecordedCall) -> None:
        agent = self._agents.get(call.agent_id, _UNSEEN)
        if agent is _UNSEEN:
            agent = await self.agent(call.agent_id)
        else:
            self._agents.move_to_end(call.agent_id)
        why = _unjudgeable(call, agent)
        if why is not None or agent is None:
            self.tally.undecided(why or NO_ROW)
            return
        verdict = await self.remembered(agent, call.tool, call.input)
        if verdict is None:
            self.tally.undecided(UNJUDGED)
            return
        then = agent.spec.profile or self.settings.profile
        source = _AGENT_SOURCE.sub(OWN_RULES, verdict.source)
        self.tally.decided(call, verdict.decision, verdict.rule, source, verdict.reason, then)

    async def remembered(
        self, agent: Agent, tool: str, tool_input: dict[str, Any]
    ) -> Verdict | None:
        """The verdict (None: the engine refused the input), once per agent, tool and
        input: the engine is deterministic and an agent's context does not change
        during a replay, and a history repeats itself (the same tests, the same
        files read again)."""
        held = _held_as(tool_input)
        key = (agent.id, tool, held) if held is not None else None
        if key is not None:
            found: Verdict | None = self._memo.get(key, _UNSEEN)
            if found is not _UNSEEN:
                self._memo.move_to_end(key)
                return found
        try:
            verdict: Verdict | None = await self.verdict(agent, tool, tool_input)
        except (PolicyError, ValueError, TypeError, RecursionError):
            verdict = None
        if key is not None:
            self._memo[key] = verdict
            if len(self._memo) > MEMO:
                self._memo.popitem(last=False)
        return verdict

    async def verdict(self, agent: Agent, tool: str, tool_input: dict[str, Any]) -> Verdict:
        gov = self.whatif
        if agent.source is AgentSource.AGENTDECK:
            return await gov.verdict(agent, tool, tool_input, await gov.grants(agent), self.home)
        verdict = hand_verdict(
            gov.profile_for(agent), tool, tool_input, workspace=agent.cwd, home=self.home,
            grants=await gov.grants(agent), governance=self.hook,
        )  # fmt: skip
        return verdict or Verdict(Decision.ALLOW, LEFT_TO_CLAUDE, None, "claude-code")

    async def in_project(self, agent_id: str, project: str) -> bool:
        agent = await self.agent(agent_id)
        if agent is None:
            return False
        inside = (agent.spec.project, agent.cwd)
        return any(p and (p == project or p.startswith(project.rstrip("/") + "/")) for p in inside)


def _held_as(tool_input: dict[str, Any]) -> Hashable | None:
    """What a verdict is remembered by for this input: equal for equal inputs only
    (None: too long to keep). Texts only: its sorted pairs; anything else: its JSON,
    keys sorted (``1``, ``1.0`` and ``true`` kept apart)."""
    size = 0
    for key, value in tool_input.items():
        if type(value) is not str or type(key) is not str:
            break
        size += len(key) + len(value)
    else:
        return tuple(sorted(tool_input.items())) if size <= MEMO_INPUT else None
    try:
        text = json.dumps(tool_input, sort_keys=True, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return None
    return text if len(text) <= MEMO_INPUT else None


def _unjudgeable(call: RecordedCall, agent: Agent | None) -> str | None:
    if agent is None:
        return NO_ROW
    if not call.tool:
        return NO_TOOL
    if not isinstance(call.input, dict):
        return NO_INPUT
    if not agent.cwd or not agent.cwd.startswith("/") or "\x00" in agent.cwd:
        return NO_CWD
    return None


def _event(row: EventRow) -> StoredEvent:
    """The event a row holds, its data decoded (a type read brief: its one field)."""
    if row.data is None:
        data: Any = {BRIEF[row.type]: row.field} if row.type in BRIEF else {}
    else:
        try:
            data = json.loads(row.data)
        except ValueError:  # not written by the store: read as an event that says nothing
            data = {}
    return StoredEvent(row.id, row.agent_id, row.type, row.ts, data if type(data) is dict else {})


async def _judge_page(
    page: list[EventRow],
    replayer: Replayer,
    ledger: CallLedger,
    since_ts: float | None,
    project: str | None,
    keep: OrderedDict[str, bool],
) -> None:
    tally = replayer.tally
    for row in page:
        if since_ts is not None and row.ts < since_ts:
            continue
        if project is not None:
            inside = keep.get(row.agent_id)
            if inside is None:
                inside = await replayer.in_project(row.agent_id, project)
                _keep(keep, row.agent_id, inside)
            if not inside:
                continue
        tally.events += 1
        for call in ledger.feed(_event(row)):
            await replayer.judge(call)
            if tally.calls % YIELD_EVERY == 0:
                # The engine runs on the loop: in a daemon, others get their turn.
                await asyncio.sleep(0)


async def first_id_since(store: Store, ts: float, last: int) -> int:
    """The id to read after so that every event from ``ts`` on is read: a bisection
    on ids (the log's times ascend with its ids, give or take a writer's batch;
    the caller still drops earlier events one by one)."""
    lo, hi = 0, last
    while lo < hi:
        mid = (lo + hi) // 2
        page = await store.read(after=mid, limit=1)
        if not page or page[0].ts >= ts:
            hi = mid
        else:
            lo = mid + 1
    return max(lo - PAGE, 0)  # a page early: times out of order near the edge are kept


async def replay(
    store: Store, settings: Settings, candidate: Profile, query: ReplayQuery
) -> PolicyReplay:
    """Re-decide the history's tool calls under ``candidate`` (see the module doc)."""
    since = query.since_seconds
    if since is not None and not 0 < since <= MAX_SINCE_SECONDS:
        raise UsageError(f"a period is more than 0 and at most 10 years, not {since!r} seconds")
    if query.agent and query.project:
        raise UsageError("replay one agent's calls or one project's, not both")
    agent_id = (await store.find_agent(query.agent)).id if query.agent else None
    project = query.project.rstrip("/") or "/" if query.project else None
    replayer = Replayer(store, settings, candidate)
    ledger, tally = CallLedger(), replayer.tally
    since_ts = time.time() - since if since is not None else None
    last = await store.last_event_id()
    cursor = await first_id_since(store, since_ts, last) if since_ts is not None else 0
    keep: OrderedDict[str, bool] = OrderedDict()

    def read(after: int) -> asyncio.Future[list[EventRow]] | None:
        if after >= last:
            return None
        rows = store.read_rows(
            after=after, upto=last, agent_id=agent_id, types=TYPES, brief=BRIEF, limit=PAGE
        )
        return asyncio.ensure_future(rows)

    # A page ahead: the store's thread reads the next while the loop judges this one.
    ahead = read(cursor)
    try:
        while ahead is not None:
            page = await ahead
            ahead = read(page[-1].id) if page else None
            await _judge_page(page, replayer, ledger, since_ts, project, keep)
    finally:
        if ahead is not None and not ahead.cancel() and not ahead.cancelled():
            ahead.exception()  # a read that failed meanwhile: this run's error is the one
    for call in ledger.flush():
        await replayer.judge(call)
    notes = [
        "paths are judged in each agent's workspace as its row holds it now, `~` as this "
        "deck's home",
        "remembered grants are those the governor would apply under the candidate now "
        "(kept per template and profile), not those in force then",
        "the decision then is the one the log recorded (a deny, an approval request); a "
        "call with neither was allowed",
    ]
    if project is not None and not replayer.tally.events:
        window = " in this period" if since is not None else ""
        notes.append(
            f"no agent worked in {project} (or under it){window}: `agentdeck ls --json` "
            "shows where each one did"
        )
    if ledger.settled_early:
        notes.append(
            f"{ledger.settled_early} calls had no end in sight after many others and were "
            "judged with the decision recorded so far"
        )
    return tally.report(
        profile=replayer.whatif.candidate.name,
        profile_source=replayer.whatif.candidate.source,
        since=since_ts,
        agent_id=agent_id,
        project=project,
        notes=tuple(notes),
    )
