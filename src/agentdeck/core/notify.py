"""Notifications, the pure part: which events tell whom what, signed how, retried when.

* ``RULES`` is the one table from events to notification kinds: a new kind is one
  row (event type, kind, which of its events, the words).
* ``Target`` is one configured destination (webhook, ntfy, desktop) with the kinds
  it wants and its filters; ``parse_targets`` reads them from a config mapping and
  refuses a bad one naming the field (``NotifyConfigError``).
* ``Notification`` is what is sent; ``payload`` its JSON body.
* ``sign`` / ``verify``: HMAC-SHA256 over ``<timestamp>.<raw body>``, so the
  timestamp a receiver checks against replay is covered by the signature.
* ``backoff``: the delay before each retry.

No I/O here: ``agentdeck.notify`` sends, the store keeps dead letters.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agentdeck.core.event_types import EventType, StoredEvent
from agentdeck.core.redact import scrub

SIGNATURE_HEADER = "X-Agentdeck-Signature"
TIMESTAMP_HEADER = "X-Agentdeck-Timestamp"
EVENT_HEADER = "X-Agentdeck-Event"
DELIVERY_HEADER = "X-Agentdeck-Delivery"
TEST_KIND = "test"


def _always(_: dict[str, Any]) -> bool:
    return True


def _text(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda data: str(data.get(key) or "")


def _message(data: dict[str, Any]) -> str:
    return str(data.get("message") or "")


def _approval_text(data: dict[str, Any]) -> str:
    command = data.get("input", {}).get("command") if isinstance(data.get("input"), dict) else None
    what = f"{data.get('tool')}: {command}" if command else str(data.get("tool"))
    reason = data.get("reason")
    return what + (f" ({reason})" if reason else "")


def _merge_refused(data: dict[str, Any]) -> bool:
    detail = data.get("detail") or {}
    return data.get("kind") == "merge" and detail.get("state") in ("refused", "failed")


def _merge_text(data: dict[str, Any]) -> str:
    detail = data.get("detail") or {}
    where = f"{detail.get('branch')} → {detail.get('target')}"
    return f"{where}: {data.get('message') or detail.get('state')}"


@dataclass(frozen=True)
class Rule:
    """Events of ``event_type`` for which ``when`` holds are notifications of ``kind``."""

    event_type: str
    kind: str
    title: str
    when: Callable[[dict[str, Any]], bool] = _always
    text: Callable[[dict[str, Any]], str] = _message


# THE table. One row per kind of notification; the first row that matches wins.
RULES: tuple[Rule, ...] = (
    Rule(
        EventType.PERMISSION_REQUESTED, "approval_needed", "Approval needed",
        when=lambda d: str(d.get("request_id", "")).startswith("ap"), text=_approval_text,
    ),
    Rule(
        EventType.QUESTION_ASKED, "ask_waiting", "Question waiting",
        when=lambda d: d.get("to_agent_id") is None, text=_text("question"),
    ),
    Rule(
        EventType.STATE_CHANGED, "agent_done", "Agent done",
        when=lambda d: d.get("new") == "done", text=lambda d: str(d.get("reason") or "done"),
    ),
    Rule(
        EventType.STATE_CHANGED, "agent_error", "Agent error",
        when=lambda d: d.get("new") == "error", text=lambda d: str(d.get("reason") or "error"),
    ),
    Rule(
        EventType.ERROR_OCCURRED, "guard_stop", "Stopped by a budget or circuit breaker",
        when=lambda d: str(d.get("kind", "")).startswith("guardrail:"),
    ),
    Rule(EventType.BUDGET_WARNING, "budget_warning", "A daily budget is 80 % spent"),
    Rule(EventType.NOTICE, "merge_refused", "Merge refused", when=_merge_refused, text=_merge_text),
)  # fmt: skip

KINDS: tuple[str, ...] = tuple(dict.fromkeys(r.kind for r in RULES))


def rule_for(event: StoredEvent) -> Rule | None:
    for rule in RULES:
        if rule.event_type == event.type and rule.when(event.data):
            return rule
    return None


class TargetKind(StrEnum):
    WEBHOOK = "webhook"
    NTFY = "ntfy"
    DESKTOP = "desktop"


class NotifyConfigError(ValueError):
    """A target's configuration is wrong; ``field`` names where (``targets.2.url``)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class Target:
    name: str
    kind: TargetKind
    url: str | None = None
    secret: str | None = field(default=None, repr=False)  # never logged, never sent
    events: frozenset[str] = frozenset(KINDS)
    projects: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        """What the API may show: no secret, and only the URL's origin (a webhook
        URL often carries a token in its path)."""
        return {
            "name": self.name,
            "kind": str(self.kind),
            "url": origin(self.url) if self.url else None,
            "signed": bool(self.secret),
            "events": sorted(self.events),
            "filters": {
                "projects": list(self.projects),
                "agents": list(self.agents),
                "templates": list(self.templates),
            },
        }


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_TARGET_KEYS = {"name", "kind", "url", "secret", "events", "filters"}
_FILTER_KEYS = {"projects", "agents", "templates"}


def origin(url: str) -> str:
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    return f"{scheme}://{host}" + ("/…" if "/" in rest.strip("/") else "")


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise NotifyConfigError(where, "must be a list of non-empty strings")
    return tuple(value)


def parse_target(raw: Any, where: str) -> Target:
    if not isinstance(raw, Mapping):
        raise NotifyConfigError(where, "must be a mapping")
    unknown = sorted(set(raw) - _TARGET_KEYS)
    if unknown:
        raise NotifyConfigError(
            f"{where}.{unknown[0]}", f"unknown key; known: {sorted(_TARGET_KEYS)}"
        )
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise NotifyConfigError(f"{where}.name", "required: letters, digits, '_', '.', '-'")
    try:
        kind = TargetKind(str(raw.get("kind")))
    except ValueError:
        choices = ", ".join(k.value for k in TargetKind)
        raise NotifyConfigError(f"{where}.kind", f"must be one of {choices}") from None
    url = raw.get("url")
    if kind is TargetKind.DESKTOP:
        if url is not None:
            raise NotifyConfigError(f"{where}.url", "a desktop target takes no url")
    elif not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
        raise NotifyConfigError(f"{where}.url", "required: an http:// or https:// URL")
    secret = raw.get("secret")
    if secret is not None:
        if kind is not TargetKind.WEBHOOK:
            raise NotifyConfigError(f"{where}.secret", "only a webhook target is signed")
        if not isinstance(secret, str) or len(secret) < 16:
            raise NotifyConfigError(f"{where}.secret", "must be a string of 16 characters or more")
    events = frozenset(KINDS)
    if "events" in raw:
        events = frozenset(_strings(raw["events"], f"{where}.events"))
        bad = sorted(events - set(KINDS))
        if bad:
            raise NotifyConfigError(
                f"{where}.events", f"unknown {bad[0]!r}; known: {', '.join(KINDS)}"
            )
    filters = raw.get("filters") or {}
    if not isinstance(filters, Mapping):
        raise NotifyConfigError(f"{where}.filters", "must be a mapping")
    unknown = sorted(set(filters) - _FILTER_KEYS)
    if unknown:
        raise NotifyConfigError(
            f"{where}.filters.{unknown[0]}", f"unknown; known: {sorted(_FILTER_KEYS)}"
        )
    picked = {k: _strings(filters[k], f"{where}.filters.{k}") for k in _FILTER_KEYS if k in filters}
    return Target(name=name, kind=kind, url=url, secret=secret, events=events, **picked)


def parse_targets(data: Any) -> list[Target]:
    """``{"targets": [...]}`` (an empty file: none)."""
    if data is None:
        return []
    if not isinstance(data, Mapping) or set(data) - {"targets"}:
        raise NotifyConfigError("targets", "the file holds one key, targets: a list")
    raw = data.get("targets") or []
    if not isinstance(raw, list):
        raise NotifyConfigError("targets", "must be a list")
    targets = [parse_target(t, f"targets.{i}") for i, t in enumerate(raw)]
    seen: set[str] = set()
    for i, t in enumerate(targets):
        if t.name in seen:
            raise NotifyConfigError(f"targets.{i}.name", f"{t.name!r} is used twice")
        seen.add(t.name)
    return targets


@dataclass(frozen=True)
class Subject:
    """The agent a notification is about, as filters see it."""

    agent_id: str
    name: str = ""
    project: str = ""
    template: str = ""


def _under(path: str, pattern: str) -> bool:
    base = pattern.rstrip("/") or "/"
    return path == base or path.startswith(base + "/") or fnmatch.fnmatchcase(path, pattern)


def wants(target: Target, kind: str, subject: Subject) -> bool:
    """Every filter given must match (a list matches if any of its entries does):
    projects by directory (the project or under it) or glob, agents by id or name
    glob, templates by name glob."""
    if kind != TEST_KIND and kind not in target.events:
        return False
    if target.projects and not any(_under(subject.project, p) for p in target.projects):
        return False
    if target.agents and not any(
        subject.agent_id == a or fnmatch.fnmatchcase(subject.name, a) for a in target.agents
    ):
        return False
    return not target.templates or any(
        fnmatch.fnmatchcase(subject.template, t) for t in target.templates
    )


@dataclass(frozen=True)
class Notification:
    kind: str
    title: str
    message: str
    subject: Subject
    event_id: int = 0
    ts: float = 0.0
    link: str | None = None
    ref: str | None = None  # the approval, ask or merge it is about


def notification_for(event: StoredEvent, subject: Subject, base_url: str) -> Notification | None:
    rule = rule_for(event)
    if rule is None:
        return None
    data = event.data
    ref = data.get("request_id") or data.get("ask_id") or (data.get("detail") or {}).get("id")
    link = f"{base_url.rstrip('/')}/agents/{event.agent_id}"
    if rule.kind == "approval_needed":
        link = approval_link(base_url, str(ref))
    elif rule.kind == "ask_waiting":
        link = f"{base_url.rstrip('/')}/asks#ask-{ref}"
    return Notification(
        kind=rule.kind,
        title=f"{rule.title}: {subject.name or event.agent_id}",
        message=scrub(rule.text(data))[:2000],  # the log is scrubbed; this is a second net
        subject=subject,
        event_id=event.id,
        ts=event.ts,
        link=link,
        ref=None if ref is None else str(ref),
    )


def approval_link(base_url: str, approval_id: str) -> str:
    """The approval's card in the dashboard's inbox."""
    return f"{base_url.rstrip('/')}/approvals#approval-{approval_id}"


def payload(n: Notification) -> dict[str, Any]:
    return {
        "kind": n.kind,
        "title": n.title,
        "message": n.message,
        "link": n.link,
        "ref": n.ref,
        "event_id": n.event_id,
        "ts": n.ts,
        "agent": {
            "id": n.subject.agent_id,
            "name": n.subject.name,
            "project": n.subject.project,
            "template": n.subject.template,
        },
    }


def from_payload(data: Mapping[str, Any]) -> Notification:
    """A stored payload back (a dead letter being replayed)."""
    agent = data.get("agent") or {}
    return Notification(
        kind=str(data["kind"]),
        title=str(data["title"]),
        message=str(data.get("message") or ""),
        subject=Subject(
            agent_id=str(agent.get("id") or ""),
            name=str(agent.get("name") or ""),
            project=str(agent.get("project") or ""),
            template=str(agent.get("template") or ""),
        ),
        event_id=int(data.get("event_id") or 0),
        ts=float(data.get("ts") or 0.0),
        link=data.get("link"),
        ref=data.get("ref"),
    )


def body(n: Notification) -> bytes:
    return json.dumps(payload(n), sort_keys=True, separators=(",", ":")).encode()


def sign(secret: str, timestamp: int, raw: bytes) -> str:
    """The signature header's value: ``sha256=<hex>`` of HMAC-SHA256 over
    ``<timestamp>.<raw body>`` with the target's secret."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + raw, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(
    secret: str, signature: str, timestamp: str, raw: bytes, *, now: float, tolerance: float = 300
) -> bool:
    """What a receiver checks: the signature matches, and the timestamp is recent."""
    try:
        ts = int(timestamp)
    except ValueError:
        return False
    if abs(now - ts) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, ts, raw), signature)


def backoff(attempt: int, *, base: float, cap: float) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1, 2, …): base, 2·base,
    4·base… up to ``cap``."""
    return float(min(cap, base * (2 ** max(0, attempt - 1))))
