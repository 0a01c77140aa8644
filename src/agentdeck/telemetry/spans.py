"""Spans as the trace builder (``telemetry.trace``) hands them out: plain records,
no telemetry library, and the attribute helpers of the GenAI conventions.

Every text in them comes from the event log, which the store scrubs before it
commits anything (``Store.record``): a span holds nothing the log does not. They
are not scrubbed a second time here (it would cost more than building the span:
~70 µs a tool call), only cut short.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

AttrValue = str | bool | int | float
ARGUMENTS_LIMIT = 1024  # characters of a tool's input kept in its span
TEXT_LIMIT = 500  # characters of an error or a reason


@dataclass(frozen=True)
class SpanLink:
    trace_id: int
    span_id: int
    attributes: dict[str, AttrValue] = field(default_factory=dict)


@dataclass(frozen=True)
class SpanData:
    """A finished span, ready for an exporter. Times in seconds since the epoch."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    start: float
    end: float
    attributes: dict[str, AttrValue]
    links: tuple[SpanLink, ...] = ()
    error: str | None = None  # set: the span's status is an error, with this message


@dataclass
class OpenSpan:
    """A span begun and not yet ended."""

    name: str
    span_id: int
    parent_id: int | None
    start: float
    attributes: dict[str, AttrValue]
    links: list[SpanLink] = field(default_factory=list)
    error: str | None = None

    def finish(self, trace_id: int, end: float, **more: object) -> SpanData:
        return SpanData(
            name=self.name,
            trace_id=trace_id,
            span_id=self.span_id,
            parent_id=self.parent_id,
            start=self.start,
            end=max(end, self.start),
            attributes={**self.attributes, **attrs(**more)} if more else self.attributes,
            links=tuple(self.links),
            error=self.error,
        )


_DOTTED: dict[str, str] = {}  # keyword -> attribute name (a__b -> a.b), as met


def attrs(**values: object) -> dict[str, AttrValue]:
    """Attributes (``a__b`` names ``a.b``) without the unset ones: an OTel
    attribute has no null. (On the path of every event: kept plain.)"""
    out: dict[str, AttrValue] = {}
    for key, value in values.items():
        if value is None or value == "" or not isinstance(value, str | bool | int | float):
            continue
        name = _DOTTED.get(key)
        if name is None:
            name = _DOTTED[key] = key.replace("__", ".")
        out[name] = value
    return out


def agent_attrs(
    agent_id: str, name: str, spec: Mapping[str, Any], parent_id: str | None
) -> dict[str, AttrValue]:
    return attrs(
        gen_ai__operation__name="invoke_agent",
        gen_ai__provider__name="anthropic",
        gen_ai__agent__id=agent_id,
        gen_ai__agent__name=name,
        gen_ai__request__model=spec.get("model"),
        agentdeck__agent__id=agent_id,
        agentdeck__parent__id=parent_id,
        agentdeck__template=spec.get("template"),
        agentdeck__profile=spec.get("profile"),
        agentdeck__user=spec.get("owner"),
        agentdeck__project=spec.get("project"),
    )


def arguments_text(tool_input: object) -> str:
    """A tool's input (as the log holds it, scrubbed) as a span shows it: JSON, cut short."""
    try:
        text = json.dumps(tool_input, ensure_ascii=False, sort_keys=True, default=str)
    except (ValueError, RecursionError):  # circular or too deep: show nothing of it
        return ""
    return text[:ARGUMENTS_LIMIT]


def short(text: object, default: str = "") -> str:
    return str(text or default)[:TEXT_LIMIT]
