"""Spans built from the event log: pure, no telemetry library, no I/O.

One trace per agent tree. Each agent is an ``invoke_agent`` span; under it a span
per turn (from the message sent to ``turn_completed``), under the turn a span per
tool call (``execute_tool``, ``tool_called`` to ``tool_returned``), per approval
and per ask (their waiting time is their length). A child agent's span sits under
the parent's turn that spawned it, and that turn links to the child. A merge is a
span under its agent, with its test. Ids come from ``telemetry.ids``: the same on
every node and across restarts.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.event_types import EventType, StoredEvent
from agentdeck.core.redact import scrub
from agentdeck.telemetry.ids import sampled, span_id_of, trace_id_of
from agentdeck.telemetry.spans import (
    AttrValue,
    OpenSpan,
    SpanData,
    SpanLink,
    agent_attrs,
    arguments_text,
    attrs,
    short,
)

MAX_TRACKS = 10_000  # agents remembered; the oldest ended ones go first


@dataclass
class _Track:
    """One agent as the builder follows it."""

    agent_id: str
    trace_id: int
    span: OpenSpan
    runs: int = 0  # how many times it came back after a final state (a resume)
    turns: int = 0
    turn: OpenSpan | None = None
    tools: dict[str, OpenSpan] = field(default_factory=dict)
    approvals: dict[str, OpenSpan] = field(default_factory=dict)
    asks: dict[str, OpenSpan] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    last_error: str | None = None
    ended: bool = False

    def under_turn(self, name: str, key: tuple[str, ...], ts: float, **more: object) -> OpenSpan:
        """A span under the turn running (or under the agent, between turns)."""
        under = self.turn or self.span
        own = attrs(agentdeck__agent__id=self.agent_id, **more)
        return OpenSpan(name, span_id_of(self.agent_id, *key), under.span_id, ts, own)


def _final(state: object) -> bool:
    try:
        return AgentState(str(state)).is_final
    except ValueError:
        return False


class TraceBuilder:
    """Feed it the log's events in order; it hands back the spans they finish."""

    def __init__(self, ratio: float = 1.0) -> None:
        self.ratio = ratio  # the share of trees traced (``ids.sampled``)
        self._tracks: dict[str, _Track] = {}
        self._roots: dict[str, str] = {}  # agent id -> its tree's root
        self._merges: dict[str, tuple[OpenSpan, int]] = {}
        # Agents of trees not traced: known, so their events cost a look-up only.
        self._untraced: OrderedDict[str, None] = OrderedDict()

    def knows(self, agent_id: str) -> bool:
        return agent_id in self._tracks or agent_id in self._untraced

    def root_of(self, agent_id: str) -> str | None:
        return self._roots.get(agent_id)

    def learn_root(self, agent_id: str, root_id: str) -> None:
        """The root the caller found (reading the ancestry) of an agent whose
        ancestors the builder has not seen."""
        self._roots[agent_id] = root_id

    def adopt(self, agent: Agent, root_id: str, since: float) -> None:
        """An agent whose spawn it did not see (it started before the daemon did, or
        the daemon restarted): a span of its own from ``since``, at its place in the
        tree, linked to the agent's first span (which an earlier daemon may have
        exported, cut at its stop: the ids never repeat)."""
        self._roots[agent.id] = root_id
        if agent.id in self._tracks:
            return
        spec = agent.spec.to_dict()
        continued = span_id_of(agent.id, "since", repr(since))
        self._open_agent(agent.id, agent.name, spec, agent.parent_id, since, own=continued)
        track = self._tracks.get(agent.id)
        if track is None:  # its tree is not traced
            return
        track.span.links.append(
            SpanLink(track.trace_id, span_id_of(agent.id), {"agentdeck.link": "continues"})
        )

    def feed(self, event: StoredEvent) -> list[SpanData]:
        kind, data, ts = event.type, event.data, event.ts
        if kind == EventType.AGENT_SPAWNED:
            name, spec = str(data.get("name") or ""), data.get("spec") or {}
            self._open_agent(event.agent_id, name, spec, data.get("parent_id"), ts)
            return []
        if kind == EventType.NOTICE and str(data.get("kind", "")).startswith("merge"):
            return self._merge(event)
        track = self._tracks.get(event.agent_id)
        if track is None:
            return []
        if track.ended:
            if kind != EventType.STATE_CHANGED or _final(data.get("new")):
                return []
            self._reopen(track, ts)
        return self._on(track, kind, data, ts)

    def close(self, now: float) -> list[SpanData]:
        """Everything still open, ended now (the daemon stops), marked cut."""
        out: list[SpanData] = []
        for track in self._tracks.values():
            if not track.ended:
                out += self._end_agent(track, now, cut=True)
        out += [
            span.finish(trace, now, agentdeck__span__cut=True)
            for span, trace in self._merges.values()
        ]
        self._merges.clear()
        return out

    # -- agents ------------------------------------------------------------------------

    def _open_agent(
        self,
        agent_id: str,
        name: str,
        spec: Mapping[str, Any],
        parent: str | None,
        ts: float,
        *,
        own: int | None = None,
    ) -> None:
        root = self._roots.get(agent_id)
        if root is None:
            root = (self._roots.get(parent) or parent) if parent else agent_id
            self._roots[agent_id] = root
        trace_id = trace_id_of(root)
        if not sampled(trace_id, self.ratio):
            self._untraced[agent_id] = None
            while len(self._untraced) > MAX_TRACKS:
                self._untraced.popitem(last=False)
            return
        own = own or span_id_of(agent_id)
        parent_span: int | None = span_id_of(parent) if parent else None
        up = self._tracks.get(parent) if parent else None
        if up is not None and not up.ended:
            spawner = up.turn or up.span
            parent_span = spawner.span_id
            spawner.links.append(SpanLink(trace_id, own, {"agentdeck.link": "spawned"}))
        name_attrs = agent_attrs(agent_id, name, spec, parent)
        span = OpenSpan(f"invoke_agent {name}".strip(), own, parent_span, ts, name_attrs)
        self._tracks[agent_id] = _Track(agent_id, trace_id, span)

    def _reopen(self, track: _Track, ts: float) -> None:
        """It runs again after a final state (resumed): a new span under the first."""
        track.runs += 1
        track.turns = 0
        track.ended = False
        run_id = span_id_of(track.agent_id, "run", repr(ts))
        more = {**track.span.attributes, "agentdeck.run": track.runs}
        track.span = OpenSpan(track.span.name, run_id, span_id_of(track.agent_id), ts, more)
        track.input_tokens = track.output_tokens = 0
        track.cost_usd = 0.0

    def _on(self, track: _Track, kind: str, data: dict[str, Any], ts: float) -> list[SpanData]:
        if kind in (EventType.USER_MESSAGE_SENT, EventType.TOOL_CALLED, EventType.ASSISTANT_TEXT):
            self._start_turn(track, ts)
        if kind == EventType.TOOL_CALLED:
            self._tool_called(track, data, ts)
        elif kind == EventType.TOOL_RETURNED:
            return self._tool_returned(track, data, ts)
        elif kind == EventType.PERMISSION_REQUESTED:
            request, tool = str(data.get("request_id")), data.get("tool")
            track.approvals[request] = track.under_turn(
                f"approval {tool or ''}".strip(), ("approval", request), ts,
                gen_ai__tool__name=tool, agentdeck__approval__id=request,
                agentdeck__approval__reason=short(data.get("reason")),
            )  # fmt: skip
        elif kind == EventType.PERMISSION_RESOLVED:
            span = track.approvals.pop(str(data.get("request_id")), None)
            if span is not None:
                return [
                    span.finish(
                        track.trace_id,
                        ts,
                        agentdeck__approval__decision=data.get("decision"),
                        agentdeck__approval__rule=data.get("rule"),
                        agentdeck__approval__by=data.get("by"),
                        agentdeck__wait_seconds=max(0.0, ts - span.start),
                    )  # fmt: skip
                ]
        elif kind == EventType.QUESTION_ASKED:
            ask = str(data.get("ask_id"))
            track.asks[ask] = track.under_turn(
                "ask", ("ask", ask), ts,
                agentdeck__ask__id=ask, agentdeck__ask__to=data.get("to_agent_id") or "person",
            )  # fmt: skip
        elif kind == EventType.QUESTION_ANSWERED:
            span = track.asks.pop(str(data.get("ask_id")), None)
            if span is not None:
                return [
                    span.finish(
                        track.trace_id,
                        ts,
                        agentdeck__ask__by=data.get("by"),
                        agentdeck__ask__expired=data.get("by") == "timeout",
                        agentdeck__wait_seconds=max(0.0, ts - span.start),
                    )  # fmt: skip
                ]
        elif kind == EventType.COST_UPDATED:
            track.cost_usd += float(data.get("delta_usd") or 0.0)
        elif kind == EventType.TURN_COMPLETED:
            return self._end_turn(track, data, ts)
        elif kind == EventType.ERROR_OCCURRED:  # the agent's span fails only if it ends so
            track.last_error = short(data.get("message"), "error")
        elif kind == EventType.STATE_CHANGED and _final(data.get("new")):
            if data.get("new") == AgentState.ERROR:
                track.span.error = short(data.get("reason") or track.last_error, "error")
            return self._end_agent(track, ts, state=str(data.get("new")))
        return []

    # -- turns and tools -----------------------------------------------------------------

    def _start_turn(self, track: _Track, ts: float) -> None:
        if track.turn is not None:  # a message while a turn runs joins that turn
            return
        track.turns += 1
        more = attrs(
            gen_ai__operation__name="chat",
            gen_ai__agent__id=track.agent_id,
            gen_ai__request__model=track.span.attributes.get("gen_ai.request.model"),
            agentdeck__agent__id=track.agent_id,
            agentdeck__turn=track.turns,
        )
        # Under this span of the agent's (a resumed or continued one numbers anew).
        own = span_id_of(track.agent_id, "turn", str(track.span.span_id), str(track.turns))
        track.turn = OpenSpan("turn", own, track.span.span_id, ts, more)

    def _tool_called(self, track: _Track, data: dict[str, Any], ts: float) -> None:
        call_id = str(data.get("tool_use_id"))
        tool = str(data.get("tool") or "")
        outer = track.tools.get(str(data.get("parent_tool_use_id") or ""))
        under = outer or track.turn or track.span
        more: dict[str, AttrValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "agentdeck.agent.id": track.agent_id,
        }
        arguments = arguments_text(data.get("input"))
        if arguments:
            more["gen_ai.tool.call.arguments"] = arguments
        own = span_id_of(track.agent_id, "tool", call_id)
        track.tools[call_id] = OpenSpan(
            f"execute_tool {tool}".strip(), own, under.span_id, ts, more
        )

    def _tool_returned(self, track: _Track, data: dict[str, Any], ts: float) -> list[SpanData]:
        span = track.tools.pop(str(data.get("tool_use_id")), None)
        if span is None:
            return []
        if data.get("is_error"):
            span.error = "the tool returned an error"
        size = int(data.get("size") or 0)
        return [span.finish(track.trace_id, ts, agentdeck__tool__output_bytes=size)]

    def _end_turn(self, track: _Track, data: dict[str, Any], ts: float) -> list[SpanData]:
        out = self._cut_waiting(track, ts)
        inp, outp = int(data.get("input_tokens") or 0), int(data.get("output_tokens") or 0)
        track.input_tokens += inp
        track.output_tokens += outp
        turn, track.turn = track.turn, None
        if turn is None:
            return out
        reason = str(data.get("terminal_reason") or data.get("subtype") or "")
        if data.get("is_error"):
            turn.error = short(reason, "error")
        done = turn.finish(
            track.trace_id, ts,
            gen_ai__usage__input_tokens=inp, gen_ai__usage__output_tokens=outp,
            gen_ai__response__finish_reasons=reason,
            gen_ai__conversation__id=data.get("session_id"),
            agentdeck__cost_usd=data.get("cost_usd"),
            agentdeck__duration_ms=data.get("duration_ms"),
        )  # fmt: skip
        return [*out, done]

    def _cut_waiting(self, track: _Track, ts: float) -> list[SpanData]:
        """Tool calls, approvals and asks still open when their turn or agent ends."""
        waiting = [*track.tools.values(), *track.approvals.values(), *track.asks.values()]
        track.tools.clear()
        track.approvals.clear()
        track.asks.clear()
        return [s.finish(track.trace_id, ts, agentdeck__span__cut=True) for s in waiting]

    def _end_agent(
        self, track: _Track, ts: float, *, state: str | None = None, cut: bool = False
    ) -> list[SpanData]:
        out = self._cut_waiting(track, ts)
        if track.turn is not None:
            out.append(track.turn.finish(track.trace_id, ts, agentdeck__span__cut=True))
            track.turn = None
        track.ended = True
        self._forget_ended()
        done = track.span.finish(
            track.trace_id, ts,
            gen_ai__usage__input_tokens=track.input_tokens,
            gen_ai__usage__output_tokens=track.output_tokens,
            agentdeck__cost_usd=round(track.cost_usd, 6), agentdeck__turns=track.turns,
            agentdeck__state=state, agentdeck__span__cut=cut or None,
        )  # fmt: skip
        return [*out, done]

    def _forget_ended(self) -> None:
        """Past ``MAX_TRACKS``, the agents that ended longest ago are forgotten (one
        that comes back is met mid-life again: ``adopt``)."""
        excess = len(self._tracks) - MAX_TRACKS
        if excess <= 0:
            return
        for agent_id in [a for a, t in self._tracks.items() if t.ended][:excess]:
            del self._tracks[agent_id]
            self._roots.pop(agent_id, None)

    # -- merges --------------------------------------------------------------------------

    def _merge(self, event: StoredEvent) -> list[SpanData]:
        data = event.data
        detail = data.get("detail") or {}
        merge_id = str(detail.get("id") or "")
        if not merge_id:
            return []
        track = self._tracks.get(event.agent_id)
        root = self._roots.get(event.agent_id) or event.agent_id
        trace_id = track.trace_id if track is not None else trace_id_of(root)
        if not sampled(trace_id, self.ratio):
            return []
        if data.get("kind") == "merge_queued":
            self._merges[merge_id] = (self._merge_span(event, detail, event.ts), trace_id)
            return []
        opened = self._merges.pop(merge_id, None)
        if opened is not None:
            span, trace_id = opened
        else:  # queued before the builder started
            span = self._merge_span(event, detail, float(detail.get("enqueued_at") or event.ts))
        state = str(detail.get("state") or "")
        if state == "failed":
            span.error = short(detail.get("reason"), "the merge failed")
        done = span.finish(
            trace_id, event.ts,
            agentdeck__merge__state=state, agentdeck__merge__landed=bool(detail.get("landed")),
            agentdeck__merge__reason=short(detail.get("reason")),
            agentdeck__merge__attempts=detail.get("attempts"),
            agentdeck__merge__conflicts=len(detail.get("conflicts") or []),
            agentdeck__merge__test_failed=bool(detail.get("test_output")),
        )  # fmt: skip
        return [done]

    def _merge_span(self, event: StoredEvent, detail: Mapping[str, Any], start: float) -> OpenSpan:
        merge_id = str(detail.get("id"))
        test = detail.get("test")
        more = attrs(
            agentdeck__agent__id=event.agent_id,
            agentdeck__merge__id=merge_id,
            agentdeck__merge__branch=detail.get("branch"),
            agentdeck__merge__target=detail.get("target"),
            agentdeck__merge__strategy=detail.get("strategy"),
            agentdeck__merge__test=scrub(str(test)) if test else None,
        )
        name = f"merge {detail.get('branch') or ''}".strip()
        return OpenSpan(
            name, span_id_of("merge", merge_id), span_id_of(event.agent_id), start, more
        )
