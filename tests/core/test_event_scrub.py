"""Scrubbing an event: every field of outside text, whatever the event type; the
structural fields as they are; a cut that never splits a secret."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest

from agentdeck.core import events as ev
from agentdeck.core.event_scrub import (
    CUT_MARGIN,
    LARGE_TEXT,
    NOT_A_TOOL_NAME,
    STRUCTURAL,
    cut_utf8,
    scrub_event,
    scrubbed_head,
    text_weight,
    tool_name,
)

KEY = "sk-ant-api03-" + "Q7x" * 30
PASSWORD_LINE = "DB_PASSWORD=hunter2hunter2"
PRIVATE = "<private>my diary</private>"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl"
SECRET_TEXT = f"see {KEY} and {PASSWORD_LINE} {PRIVATE}"
EVENT_TYPES = [
    cls
    for cls in vars(ev).values()
    if isinstance(cls, type) and issubclass(cls, ev.Event) and cls is not ev.Event
]


def _filled(cls: type[ev.Event]) -> ev.Event:
    """An instance whose every text field carries secrets (nested ones too)."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        kind = str(hints[f.name])
        if f.name in STRUCTURAL:
            values[f.name] = (
                {"ts": 1.0, "size": 5}.get(f.name, "id-1")
                if "str" in kind
                else (False if "bool" in kind else 1.0 if "float" in kind else 1)
            )
        elif "dict" in kind:
            values[f.name] = {"command": SECRET_TEXT, "api_key": "abc123", "n": 3}
        elif "list" in kind:
            values[f.name] = [SECRET_TEXT, {"password": "pw-value-1"}]
        elif "str" in kind:
            values[f.name] = SECRET_TEXT
        elif "bool" in kind:
            values[f.name] = False
        else:
            values[f.name] = 1
    return cls(**values)


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _texts(v)]
    return []


def test_every_event_type_is_covered() -> None:
    assert {cls.type for cls in EVENT_TYPES} == set(ev.EventType)


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda c: c.__name__)
def test_every_text_field_of_every_event_is_scrubbed(cls: type[ev.Event]) -> None:
    event = _filled(cls)
    clean = scrub_event(event)
    for f in dataclasses.fields(cls):
        before, after = getattr(event, f.name), getattr(clean, f.name)
        if f.name in STRUCTURAL:
            assert after == before, f.name
            continue
        for text in _texts(after):
            assert KEY not in text and "hunter2" not in text and "my diary" not in text, f.name
            assert "pw-value-1" not in text and "abc123" not in text, f.name
        if _texts(before):
            assert any("[REDACTED:" in t for t in _texts(after)), f.name


def test_an_event_without_secrets_is_returned_as_it_is() -> None:
    event = ev.ToolCalled(
        agent_id="a", ts=1.0, tool_use_id="t", tool="Bash", input={"command": "ls -la"}
    )
    assert scrub_event(event) is event


def test_ids_and_tool_names_are_never_touched() -> None:
    # An id shaped like a token is still an id: other events refer to it.
    odd = "ghp_" + "A1" * 20
    event = ev.ToolReturned(agent_id="a", ts=1.0, tool_use_id=odd, output=f"x {KEY}")
    clean = scrub_event(event)
    assert clean.tool_use_id == odd and KEY not in clean.output


def test_text_weight_counts_nested_text_up_to_a_limit() -> None:
    event = ev.ToolCalled(
        agent_id="a", ts=1.0, tool_use_id="t", tool="Write",
        input={"file_path": "/x", "content": "y" * 100, "more": ["z" * 10]},
    )  # fmt: skip
    assert text_weight(event) == 2 + 100 + 10
    big = ev.AssistantText(agent_id="a", ts=1.0, text="w" * (LARGE_TEXT * 4))
    assert text_weight(big) >= LARGE_TEXT


@pytest.mark.parametrize("where", range(-60, 40, 7))
def test_a_secret_straddling_the_cut_leaves_no_piece_behind(where: int) -> None:
    limit = 1000
    for secret, text in [
        (KEY, KEY),
        ("hunter2hunter2", PASSWORD_LINE),
        (JWT, f"Authorization: Bearer {JWT}"),
    ]:  # fmt: skip
        before = "a" * (limit + where - len(text) // 2) + "\n"
        head = scrubbed_head(before + text + "\ntail", limit)
        assert len(head.encode()) <= limit
        cut = head[len(before) :]
        # Whatever survived the cut is no prefix of the secret longer than 3 characters.
        assert not any(secret[:n] in cut for n in range(4, len(secret) + 1)), (where, cut)


def test_the_margin_covers_a_secret_longer_than_itself() -> None:
    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "M" * (CUT_MARGIN * 2)
        + "\n-----END RSA PRIVATE KEY-----"
    )
    head = scrubbed_head("x\n" + pem, 100)
    assert "MMMM" not in head and "[REDACTED:private-key]" in head


def test_cut_utf8_never_splits_a_character() -> None:
    assert cut_utf8("é" * 10, 5) == "é" * 2


@pytest.mark.parametrize(
    "name",
    [
        KEY,  # a token as a tool's name
        f"see {KEY}",
        "mcp__x__ghp_" + "a1B2" * 9,  # a token after a separator: no scrub of the whole sees it
        "Bash\nDB_PASSWORD=hunter2hunter2",
        "x" * 65,
        "Bash\u202e",
        "",
    ],
)
def test_a_tool_name_that_is_no_plain_name_or_hides_a_secret_is_not_kept(name: str) -> None:
    """``tool`` is structural (not scrubbed as text) but the model writes it."""
    event = ev.ToolCalled(agent_id="a1", ts=1.0, tool_use_id="t1", tool=name, input={})
    assert scrub_event(event).tool == NOT_A_TOOL_NAME
    assert tool_name(name) == NOT_A_TOOL_NAME


def test_real_tool_names_are_kept_as_they_are() -> None:
    for name in ("Bash", "Read", "mcp__deck__spawn_agent", "mcp__claude-in-chrome__tabs_context"):
        event = ev.ToolCalled(agent_id="a1", ts=1.0, tool_use_id="t1", tool=name, input={})
        assert scrub_event(event) is event
        assert tool_name(name) is name
