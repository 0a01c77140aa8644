"""Policy what-if on history: the tool calls the event log recorded, the decision
each got then, and which of them a candidate profile would decide otherwise. Pure.

The log holds no single "decision" event per call; ``CallLedger`` rebuilds it
from the events the governor and the hook bridge write:

- ``tool_called`` opens a call (``tool_use_id``, tool, input);
- ``permission_resolved`` whose ``request_id`` is the call's ``tool_use_id`` is
  the policy's (or a grant's) own decision: a deny (or the hook's "ask" handed
  to Claude Code's prompt);
- ``permission_requested`` (an approval request, ``ap…``) for the same tool and
  input is an "ask" (how a person answered it later is kept beside it);
- a call that got neither before its ``tool_returned`` (or the end of the log)
  was allowed: every call of an agent agentdeck runs goes through the governor,
  and only allows leave no event. (For a session started by hand, "allow"
  means agentdeck left the call to Claude Code's own rules.)

``ReplayTally`` groups the calls whose decision changes by the rule that decides
under the candidate, with a few examples. Inputs, rules and reasons are model
or operator text: shown scrubbed, escaped for a terminal and cut short.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentdeck.core.event_types import EventType, StoredEvent
from agentdeck.core.policy_profile import Decision
from agentdeck.core.redact import scrub, scrub_value

# The event types the ledger reads (all others are skipped by the store's query).
TYPES = (
    EventType.TOOL_CALLED,
    EventType.TOOL_RETURNED,
    EventType.PERMISSION_REQUESTED,
    EventType.PERMISSION_RESOLVED,
)
# What the ledger reads of a type's data when not all of it (a tool's output: no).
BRIEF: dict[str, str] = {EventType.TOOL_RETURNED: "tool_use_id"}
MAX_OPEN = 20_000  # calls waiting for their decision; past it the oldest is settled
MAX_ORPHANS = 5_000  # approval requests seen before their call
MAX_GROUPS = 200  # distinct (change, rule) groups; more fold into OTHER_RULE
OTHER_RULE = "(other rules)"
EXAMPLES = 3  # example calls per group
SHOWN = 240  # characters of an input, a rule or a reason shown
MAX_PROFILE_TEXT = 256 * 1024  # a candidate profile sent by a caller
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_STRICT = {Decision.ALLOW: 0, Decision.ASK: 1, Decision.DENY: 2}


def shown(text: str, limit: int = SHOWN) -> str:
    """``text`` scrubbed, on one line, with nothing a terminal or a page would act
    on (controls, bidi marks), at most ``limit`` characters (``…`` when cut)."""
    cut = len(text) > limit
    text = _UNSAFE.sub("?", scrub(text[: limit + 64]).replace("\n", "⏎"))
    return text[:limit] + "…" if cut or len(text) > limit else text


def input_text(tool_input: Any, limit: int = SHOWN) -> str:
    """A tool input as short JSON, scrubbed (its secret-named keys too)."""
    try:
        text = json.dumps(scrub_value(tool_input), ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        text = "(an input that is not JSON)"
    return shown(text, limit)


def change_of(before: Decision, after: Decision) -> str:
    return f"{before}→{after}"


def stricter(before: Decision, after: Decision) -> bool:
    return _STRICT[after] > _STRICT[before]


@dataclass
class RecordedCall:
    """One tool call as the log recorded it, with the decision it got then."""

    event_id: int
    agent_id: str
    ts: float
    tool: str
    input: Any
    tool_use_id: str | None
    before: Decision = Decision.ALLOW
    answered: str | None = None  # how a person (or the deadline) answered an ask


class CallLedger:
    """Feed it the log's events in id order (``feed``); it yields each call once
    its decision is known, and the rest at ``flush``. Memory: the calls still
    open (bounded by ``MAX_OPEN``) and approval requests seen before their call."""

    def __init__(self) -> None:
        self._open: OrderedDict[tuple[str, str], RecordedCall] = OrderedDict()
        self._asked: dict[str, RecordedCall] = {}  # approval id: its call
        self._orphans: OrderedDict[str, RecordedCall] = OrderedDict()  # approval id: request
        self.settled_early = 0  # calls settled by MAX_OPEN before their end was seen

    def feed(self, event: StoredEvent) -> list[RecordedCall]:
        """The calls whose decision ``event`` settles (most events: none)."""
        data, agent = event.data, event.agent_id
        if event.type == EventType.TOOL_CALLED:
            use_id = str(data.get("tool_use_id") or f"event-{event.id}")
            call = RecordedCall(
                event.id, agent, event.ts, str(data.get("tool") or ""), data.get("input"), use_id
            )
            if self._orphans:
                orphan = self._orphan_for(call)
                if orphan is not None:
                    call.before = Decision.ASK
                    self._remember_ask(orphan, call)
            self._open[(agent, use_id)] = call
            if len(self._open) > MAX_OPEN:
                self.settled_early += 1
                return [self._open.popitem(last=False)[1]]
        elif event.type == EventType.TOOL_RETURNED:
            done = self._open.pop((agent, str(data.get("tool_use_id"))), None)
            if done is not None:
                return [done]
        elif event.type == EventType.PERMISSION_REQUESTED:
            request = str(data.get("request_id") or "")
            match = self._call_for(agent, str(data.get("tool") or ""), data.get("input"))
            if match is not None:
                match.before = Decision.ASK
                self._remember_ask(request, match)
            else:
                self._orphans[request] = RecordedCall(
                    event.id, agent, event.ts, str(data.get("tool") or ""), data.get("input"),
                    None, Decision.ASK,
                )  # fmt: skip
                out = []
                while len(self._orphans) > MAX_ORPHANS:
                    out.append(self._orphans.popitem(last=False)[1])
                return out
        elif event.type == EventType.PERMISSION_RESOLVED:
            return self._resolved(agent, data)
        return []

    def _resolved(self, agent: str, data: Mapping[str, Any]) -> list[RecordedCall]:
        request = str(data.get("request_id") or "")
        answer = f"{data.get('decision')} by {data.get('by') or 'nobody'}"
        asked = self._asked.pop(request, None) or self._orphans.get(request)
        if asked is not None:
            asked.answered = answer
            return []
        call = self._open.get((agent, request))
        if call is None:
            return []
        try:
            decision = Decision(str(data.get("decision")))
        except ValueError:
            return []
        call.before = decision
        if decision is Decision.DENY:  # it never runs: no result will close it
            del self._open[(agent, request)]
            return [call]
        return []

    def _remember_ask(self, request: str, call: RecordedCall) -> None:
        self._asked[request] = call
        while len(self._asked) > MAX_OPEN:  # requests never answered (agents killed)
            del self._asked[next(iter(self._asked))]

    def _call_for(self, agent: str, tool: str, tool_input: Any) -> RecordedCall | None:
        for (owner, _), call in self._open.items():
            same = owner == agent and call.before is Decision.ALLOW and call.tool == tool
            if same and call.input == tool_input:
                return call
        return None

    def _orphan_for(self, call: RecordedCall) -> str | None:
        for request, orphan in self._orphans.items():
            same = orphan.agent_id == call.agent_id and orphan.tool == call.tool
            if same and orphan.input == call.input:
                del self._orphans[request]
                call.answered = orphan.answered
                return request
        return None

    def flush(self) -> Iterator[RecordedCall]:
        """The calls still open (their agent stopped, or the log ends), and
        approval requests whose call was never seen."""
        while self._open:
            yield self._open.popitem(last=False)[1]
        while self._orphans:
            yield self._orphans.popitem(last=False)[1]
        self._asked.clear()


@dataclass(frozen=True)
class ReplayExample:
    """One call whose decision changes: what it was, scrubbed and cut short."""

    event_id: int
    agent_id: str
    ts: float
    tool: str
    input: str
    profile: str  # the profile the agent ran under then
    answered: str | None  # how a person answered it then, if it was asked
    reason: str  # why the candidate decides so

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplayExample:
        return cls(
            event_id=int(data["event_id"]), agent_id=str(data["agent_id"]),
            ts=float(data["ts"]), tool=str(data["tool"]), input=str(data["input"]),
            profile=str(data["profile"]),
            answered=None if data.get("answered") is None else str(data["answered"]),
            reason=str(data["reason"]),
        )  # fmt: skip


@dataclass(frozen=True)
class ReplayGroup:
    """Calls whose decision goes from ``before`` to ``after`` under the rule that
    decides now (None: the profile's default or its tool list) from ``source``."""

    before: Decision
    after: Decision
    rule: str | None
    source: str
    count: int
    examples: tuple[ReplayExample, ...]

    @property
    def change(self) -> str:
        return change_of(self.before, self.after)

    def to_dict(self) -> dict[str, Any]:
        return {
            "change": self.change, "before": str(self.before), "after": str(self.after),
            "rule": self.rule, "source": self.source, "count": self.count,
            "examples": [e.to_dict() for e in self.examples],
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplayGroup:
        return cls(
            before=Decision(data["before"]), after=Decision(data["after"]),
            rule=None if data.get("rule") is None else str(data["rule"]),
            source=str(data["source"]), count=int(data["count"]),
            examples=tuple(ReplayExample.from_dict(e) for e in data["examples"]),
        )  # fmt: skip


@dataclass(frozen=True)
class PolicyReplay:
    """What a candidate profile would have decided otherwise, over the log's calls.

    ``calls``: the calls found; ``redecided`` = ``changed`` + ``unchanged``; the
    rest were not re-decided, counted by why in ``undecided``. ``notes`` say what
    the re-decision assumed."""

    profile: str
    profile_source: str
    since: float | None
    agent_id: str | None
    project: str | None
    events: int  # the log's events read
    calls: int
    changed: int
    unchanged: int
    groups: tuple[ReplayGroup, ...]
    undecided: tuple[tuple[str, int], ...]
    notes: tuple[str, ...] = ()

    @property
    def redecided(self) -> int:
        return self.changed + self.unchanged

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile, "profile_source": self.profile_source,
            "since": self.since, "agent_id": self.agent_id, "project": self.project,
            "events": self.events, "calls": self.calls, "redecided": self.redecided,
            "changed": self.changed, "unchanged": self.unchanged,
            "groups": [g.to_dict() for g in self.groups],
            "undecided": [{"why": w, "count": n} for w, n in self.undecided],
            "notes": list(self.notes),
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PolicyReplay:
        return cls(
            profile=str(data["profile"]), profile_source=str(data["profile_source"]),
            since=None if data.get("since") is None else float(data["since"]),
            agent_id=data.get("agent_id"), project=data.get("project"),
            events=int(data["events"]), calls=int(data["calls"]),
            changed=int(data["changed"]), unchanged=int(data["unchanged"]),
            groups=tuple(ReplayGroup.from_dict(g) for g in data["groups"]),
            undecided=tuple((str(u["why"]), int(u["count"])) for u in data["undecided"]),
            notes=tuple(str(n) for n in data.get("notes", [])),
        )  # fmt: skip


@dataclass
class _Group:
    count: int = 0
    examples: list[ReplayExample] = field(default_factory=list)


@dataclass
class ReplayTally:
    """Counts as calls are re-decided; ``report`` builds the record."""

    events: int = 0
    calls: int = 0
    unchanged: int = 0
    _groups: dict[tuple[Decision, Decision, str | None, str], _Group] = field(default_factory=dict)
    _undecided: dict[str, int] = field(default_factory=dict)

    def undecided(self, why: str) -> None:
        self.calls += 1
        self._undecided[why] = self._undecided.get(why, 0) + 1

    def decided(
        self,
        call: RecordedCall,
        after: Decision,
        rule: str | None,
        source: str,
        reason: str,
        profile: str,
    ) -> None:
        self.calls += 1
        if after is call.before:
            self.unchanged += 1
            return
        key = (call.before, after, rule, source)  # shown (scrubbed, cut) in ``report``
        if key not in self._groups and len(self._groups) >= MAX_GROUPS:
            key = (call.before, after, OTHER_RULE, "")
        group = self._groups.setdefault(key, _Group())
        group.count += 1
        if len(group.examples) < EXAMPLES:
            group.examples.append(
                ReplayExample(
                    event_id=call.event_id, agent_id=call.agent_id, ts=call.ts,
                    tool=shown(call.tool, 80), input=input_text(call.input),
                    profile=shown(profile, 80),
                    answered=None if call.answered is None else shown(call.answered, 80),
                    reason=shown(reason),
                )
            )  # fmt: skip

    def report(
        self,
        *,
        profile: str,
        profile_source: str,
        since: float | None,
        agent_id: str | None,
        project: str | None,
        notes: tuple[str, ...] = (),
    ) -> PolicyReplay:
        groups = sorted(
            (
                ReplayGroup(
                    before,
                    after,
                    None if rule is None else shown(rule),
                    shown(source, 80),
                    g.count,
                    tuple(g.examples),
                )  # fmt: skip
                for (before, after, rule, source), g in self._groups.items()
            ),
            key=lambda g: (-int(stricter(g.before, g.after)), -g.count, g.change, g.rule or ""),
        )
        changed = sum(g.count for g in groups)
        return PolicyReplay(
            profile=profile, profile_source=profile_source, since=since,
            agent_id=agent_id, project=project, events=self.events, calls=self.calls,
            changed=changed, unchanged=self.unchanged, groups=tuple(groups),
            undecided=tuple(sorted(self._undecided.items(), key=lambda kv: -kv[1])),
            notes=notes,
        )  # fmt: skip
