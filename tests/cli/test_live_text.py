"""``cli.live_text``: the words as they come, the event's rest after them, the event
printed whole when the line could not show the text as it ended."""

from __future__ import annotations

import io

from agentdeck.cli.live_text import LiveText


def edit(offset: int, text: str, block: str = "m:0") -> dict[str, object]:
    return {"type": "partial", "block": block, "offset": offset, "text": text}


def text_event(text: str) -> dict[str, object]:
    return {"id": 9, "type": "assistant_text", "data": {"text": text}}


def live() -> tuple[LiveText, io.StringIO, list[str]]:
    out, calls = io.StringIO(), []
    shown = LiveText(
        out,
        colour=False,
        on_start=lambda: calls.append("start"),
        on_end=lambda: calls.append("end"),
    )
    return shown, out, calls


def test_words_then_the_rest_of_the_event_once() -> None:
    shown, out, calls = live()
    shown.partial(edit(0, "Hello "))
    shown.partial(edit(6, "there "))
    assert out.getvalue() == "● Hello there "
    assert shown.event(text_event("Hello there world.")) is True
    assert out.getvalue() == "● Hello there world.\n" and calls == ["start", "end"]
    assert shown.event({"id": 10, "type": "turn_completed", "data": {}}) is False


def test_a_rewrite_leaves_the_block_to_its_event() -> None:
    shown, out, _ = live()
    shown.partial(edit(0, "key: abc "))
    shown.partial(edit(5, "[REDACTED:x] "))
    shown.partial(edit(18, "more "))  # the block is left to its event
    assert out.getvalue() == "● key: abc …\n"
    assert shown.event(text_event("key: [REDACTED:x] more")) is False


def test_joining_mid_block_shows_nothing_of_it() -> None:
    shown, out, _ = live()
    shown.partial(edit(40, "late words "))
    assert out.getvalue() == "" and shown.event(text_event("...late words")) is False


def test_another_event_ends_the_line_and_is_printed() -> None:
    shown, out, _ = live()
    shown.partial(edit(0, "cut short "))
    assert shown.event({"id": 3, "type": "state_changed", "data": {"new": "interrupted"}}) is False
    shown.close()
    assert out.getvalue() == "● cut short \n"


def test_a_subagents_text_is_left_to_its_event() -> None:
    shown, out, _ = live()
    shown.partial({**edit(0, "from a subagent "), "parent_tool_use_id": "toolu_1"})
    assert out.getvalue() == "" and not shown.writing


def test_a_new_block_ends_the_line_of_the_one_before() -> None:
    shown, out, _ = live()
    shown.partial(edit(0, "first "))
    shown.partial(edit(0, "second ", block="m:1"))
    assert out.getvalue() == "● first \n● second "
