"""The pure part of notifications: the event table, targets and filters, signing, backoff."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from agentdeck.core import notify
from agentdeck.core.event_types import StoredEvent
from agentdeck.core.notify import NotifyConfigError, Subject, Target, TargetKind

SECRET = "s3cret-s3cret-s3cret"


def event(type_: str, **data: object) -> StoredEvent:
    return StoredEvent(id=7, agent_id="a1", type=type_, ts=1.0, data=dict(data))


@pytest.mark.parametrize(
    ("ev", "kind"),
    [
        (event("permission_requested", request_id="ap1", tool="Bash", input={}), "approval_needed"),
        (event("permission_requested", request_id="pd1", tool="Bash", input={}), None),
        (event("question_asked", ask_id="q1", question="?", to_agent_id=None), "ask_waiting"),
        (event("question_asked", ask_id="q1", question="?", to_agent_id="a0"), None),
        (event("state_changed", old="running", new="done"), "agent_done"),
        (event("state_changed", old="running", new="error"), "agent_error"),
        (event("state_changed", old="starting", new="running"), None),
        (event("error_occurred", kind="guardrail:budget", message="over $1"), "guard_stop"),
        (event("error_occurred", kind="process", message="exited"), None),
        (event("budget_warning", scope="user", name="alice", daily_usd=5.0, spent_usd=4.1,
               day="2026-11-25", message="user alice's daily budget is 82 % spent"),
         "budget_warning"),
        (event("notice", kind="merge", message="tests failed", detail={"state": "refused"}),
         "merge_refused"),
        (event("notice", kind="merge", message="landed", detail={"state": "landed"}), None),
        (event("assistant_text", text="hi"), None),
    ],
)  # fmt: skip
def test_the_table_maps_events_to_kinds(ev: StoredEvent, kind: str | None) -> None:
    rule = notify.rule_for(ev)
    assert (rule.kind if rule else None) == kind


def test_every_kind_is_one_row_of_the_table() -> None:
    assert tuple(dict.fromkeys(r.kind for r in notify.RULES)) == notify.KINDS
    assert set(notify.KINDS) >= {
        "approval_needed", "ask_waiting", "agent_done", "agent_error", "guard_stop",
        "merge_refused", "budget_warning",
    }  # fmt: skip


def test_an_approval_links_straight_to_its_card() -> None:
    ev = event("permission_requested", request_id="ap9", tool="Bash", input={"command": "ls"})
    n = notify.notification_for(ev, Subject("a1", name="fixer"), "http://deck:8765/")
    assert n is not None
    assert n.link == "http://deck:8765/approvals#approval-ap9"
    assert n.ref == "ap9" and n.title == "Approval needed: fixer" and "Bash: ls" in n.message
    assert notify.from_payload(notify.payload(n)) == n


def test_targets_parse_and_bad_ones_name_the_field() -> None:
    (t,) = notify.parse_targets(
        {
            "targets": [
                {
                    "name": "ops",
                    "kind": "webhook",
                    "url": "https://hooks.example.com/T0/secret-path",
                    "secret": SECRET,
                    "events": ["approval_needed"],
                    "filters": {"projects": ["/srv/app"], "templates": ["review*"]},
                }
            ]
        }
    )
    assert t.kind is TargetKind.WEBHOOK and t.events == {"approval_needed"}
    shown = t.describe()
    assert shown["url"] == "https://hooks.example.com/…" and shown["signed"] is True
    assert SECRET not in json.dumps(shown) and SECRET not in repr(t)
    bad = [
        ({"targets": [{"kind": "webhook", "url": "http://x"}]}, "targets.0.name"),
        ({"targets": [{"name": "a", "kind": "pager", "url": "http://x"}]}, "targets.0.kind"),
        ({"targets": [{"name": "a", "kind": "webhook", "url": "ftp://x"}]}, "targets.0.url"),
        ({"targets": [{"name": "a", "kind": "desktop", "url": "http://x"}]}, "targets.0.url"),
        ({"targets": [{"name": "a", "kind": "webhook", "url": "http://x", "secret": "short"}]},
         "targets.0.secret"),
        ({"targets": [{"name": "a", "kind": "ntfy", "url": "http://x", "events": ["oops"]}]},
         "targets.0.events"),
        ({"targets": [{"name": "a", "kind": "ntfy", "url": "http://x", "filters": {"team": []}}]},
         "targets.0.filters.team"),
        ({"targets": [{"name": "a", "kind": "desktop"}, {"name": "a", "kind": "desktop"}]},
         "targets.1.name"),
        ({"targets": [{"name": "a", "kind": "desktop", "colour": "red"}]}, "targets.0.colour"),
        ({"webhooks": []}, "targets"),
    ]  # fmt: skip
    for data, field in bad:
        with pytest.raises(NotifyConfigError) as caught:
            notify.parse_targets(data)
        assert caught.value.field == field, data


def test_filters_by_kind_project_agent_and_template() -> None:
    t = Target(
        name="t", kind=TargetKind.DESKTOP, events=frozenset({"agent_done"}),
        projects=("/srv/app",), agents=("fix*",), templates=("engineer",),
    )  # fmt: skip
    ok = Subject("a1", name="fixer", project="/srv/app/sub", template="engineer")
    assert notify.wants(t, "agent_done", ok)
    assert not notify.wants(t, "agent_error", ok)
    assert not notify.wants(t, "agent_done", Subject("a1", "fixer", "/srv/application", "engineer"))
    assert not notify.wants(t, "agent_done", Subject("a1", "other", "/srv/app", "engineer"))
    assert notify.wants(
        Target(name="t", kind=TargetKind.DESKTOP, agents=("a1",)), "agent_done", Subject("a1")
    )
    assert not notify.wants(t, "agent_done", Subject("a1", "fixer", "/srv/app", "reviewer"))


def test_the_signature_is_hmac_sha256_over_timestamp_and_body() -> None:
    raw = b'{"kind":"test"}'
    signature = notify.sign(SECRET, 1700000000, raw)
    expected = hmac.new(SECRET.encode(), b"1700000000." + raw, hashlib.sha256).hexdigest()
    assert signature == f"sha256={expected}"
    assert notify.verify(SECRET, signature, "1700000000", raw, now=1700000010)
    assert not notify.verify(SECRET, signature, "1700000000", raw + b" ", now=1700000010)
    assert not notify.verify(SECRET, signature, "1700000001", raw, now=1700000010)
    assert not notify.verify(SECRET, signature, "1700000000", raw, now=1700009999)  # replayed
    assert not notify.verify("another-secret-xx", signature, "1700000000", raw, now=1700000010)


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [notify.backoff(a, base=2, cap=30) for a in range(1, 7)] == [2, 4, 8, 16, 30, 30]


def test_a_secret_in_the_request_is_not_sent_and_an_ask_links_to_its_card() -> None:
    ev = event(
        "permission_requested",
        request_id="ap3",
        tool="Bash",
        input={"command": "DB_PASSWORD=hunter2 ./migrate"},
    )
    n = notify.notification_for(ev, Subject("a1"), "http://deck")
    assert n is not None and "hunter2" not in n.message and "./migrate" in n.message
    asked = event("question_asked", ask_id="q7", question="which DB?", to_agent_id=None)
    n = notify.notification_for(asked, Subject("a1"), "http://deck")
    assert n is not None and n.link == "http://deck/asks#ask-q7" and n.message == "which DB?"
