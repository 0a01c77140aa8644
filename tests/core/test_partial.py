"""The text being written, as followers see it (``core.partial``): edits that
build the scrubbed text, a word held back until it ends, a secret never shown
half written or in clear, even split across deltas."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentdeck.core.partial import PARTIAL_BLOCK_LIMIT, PartialBlock, PartialText
from agentdeck.core.redact import scrub

SECRET = "sk-ant-api03-" + "Zx9" * 30 + "AA"


def shown_after(deltas: list[str]) -> tuple[str, list[PartialText]]:
    block = PartialBlock("a1", "m:0", None)
    shown, edits = "", []
    for delta in deltas:
        block.add(delta)
        edit = block.take()
        if edit is not None:
            edits.append(edit)
            shown = edit.applied(shown)
    return shown, edits


def test_edits_build_the_text_up_to_the_word_being_written() -> None:
    shown, edits = shown_after(["Hel", "lo wor", "ld, and", " more"])
    assert shown == "Hello world, and "
    assert [e.offset for e in edits] == [0, 6, 13]
    assert all(e.block == "m:0" and e.agent_id == "a1" for e in edits)


def test_nothing_new_is_no_edit() -> None:
    block = PartialBlock("a1", "m:0", None)
    block.add("one")
    assert block.take() is None  # no word ended yet
    block.add(" two")
    assert block.take() is not None
    assert block.take() is None


def test_a_secret_split_across_deltas_is_never_shown() -> None:
    text = f"The key is {SECRET} and DB_PASSWORD=hunter2secret ok done"
    deltas = [text[i : i + 3] for i in range(0, len(text), 3)]
    shown, edits = shown_after(deltas)
    assert shown == scrub(text)[: len(shown)] and "[REDACTED:" in shown
    for edit in edits:
        assert SECRET[:16] not in edit.text and "hunter2" not in edit.text


def test_a_name_that_reveals_a_secret_later_rewrites_what_was_shown() -> None:
    # "PASSWORD =" alone is nothing; the value after it is redacted in context.
    shown, edits = shown_after(["export DB_PASSWORD=", "s3cr3tvalue9 ", "next "])
    assert "s3cr3tvalue9" not in shown and "s3cr3tvalue9" not in "".join(e.text for e in edits)


def test_a_block_past_the_limit_is_no_longer_streamed() -> None:
    block = PartialBlock("a1", "m:0", None)
    block.add("x " * (PARTIAL_BLOCK_LIMIT // 2 + 10))
    assert block.take() is None


def test_the_record_round_trips() -> None:
    edit = PartialText(agent_id="a", block="m:1", offset=3, text="yes ", parent_tool_use_id="t")
    assert PartialText.from_dict(edit.to_dict()) == edit
    assert edit.applied("abcdef") == "abcyes "


@given(st.lists(st.text(alphabet="ab =\n:", max_size=8), max_size=30))
def test_what_is_shown_is_always_the_scrubbed_text_so_far(deltas: list[str]) -> None:
    shown, _ = shown_after(deltas)
    whole = "".join(deltas)
    cut = max(whole.rfind(" "), whole.rfind("\n"), whole.rfind("\t"))
    assert shown == (scrub(whole[: cut + 1]) if cut >= 0 else "")
