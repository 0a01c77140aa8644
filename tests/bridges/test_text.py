"""What the bridge shows: chunks that never break a code block, compact tool
lines, prompts. Pure functions, no daemon."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentdeck.bridges.text import (
    append_part,
    approval_text,
    balanced,
    open_fence,
    resolved_text,
    split_message,
    split_parts,
    tool_line,
)


def test_short_text_is_one_chunk_and_empty_text_none() -> None:
    assert split_message("hello", 2000) == ["hello"]
    assert split_message("", 2000) == []
    assert split_message("  \n\n ", 2000) == []


def test_cuts_fall_at_line_ends() -> None:
    text = "\n".join(f"line {i:03d}" for i in range(100))
    chunks = split_message(text, 100)
    assert all(len(c) <= 100 for c in chunks)
    assert all(c.endswith("\n") for c in chunks[:-1])
    assert "".join(chunks) == text


def test_a_code_block_cut_is_closed_and_reopened_with_its_language() -> None:
    code = "\n".join(f"x{i} = {i}" for i in range(40))
    chunks = split_message(f"Intro\n```python\n{code}\n```\nAfter.", 120)
    assert len(chunks) > 2
    for chunk in chunks:
        assert len(chunk) <= 120 and open_fence(chunk) is None
    assert all(c.startswith("```python\n") for c in chunks[1:])
    assert chunks[-1].endswith("```\nAfter.")


def test_tilde_fences_and_longer_fences_are_respected() -> None:
    inner = "```\nnot a close\n```\n" * 10
    text = f"~~~~md\n{inner}~~~~\ndone"
    chunks = split_message(text, 64)
    assert all(open_fence(c) is None for c in chunks)
    assert all(c.startswith("~~~~md\n") for c in chunks[1:-1])


def test_a_line_longer_than_the_limit_is_cut_inside_its_block() -> None:
    text = "```\n" + "y" * 300 + "\n```"
    chunks = split_message(text, 100)
    assert all(len(c) <= 100 and c.startswith("```\n") and c.endswith("```") for c in chunks)
    assert "".join(re.sub(r"```\n?", "", c).replace("\n", "") for c in chunks) == "y" * 300


def test_a_limit_too_small_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="too small"):
        split_message("x", 10)


TEXT = st.lists(
    st.one_of(
        st.sampled_from(["```", "```python", "~~~", "````", "```js", "", " ", "    ```"]),
        st.text(alphabet="ab `~\t#*_", max_size=90),
    ),
    max_size=60,
).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(text=TEXT, limit=st.integers(min_value=32, max_value=300))
def test_chunks_fit_are_balanced_and_keep_every_character(text: str, limit: int) -> None:
    parts = split_parts(text, limit)
    for head, body, tail in parts:
        chunk = head + body + tail
        assert len(chunk) <= limit
        assert body.strip()
        assert open_fence(chunk) is None, chunk
    joined = "".join(body for _, body, _ in parts)
    # Only runs of whitespace that would have been a chunk alone may go.
    assert re.sub(r"\s", "", joined) == re.sub(r"\s", "", text)
    rest = iter(text)
    assert all(c in rest for c in joined), "the chunks' text is the text's, in order"


def test_balanced_closes_a_block_still_being_written() -> None:
    assert balanced("a\n```py\nx = 1") == "a\n```py\nx = 1\n```"
    assert balanced("done") == "done"


@pytest.mark.parametrize(
    ("tool", "tool_input", "line"),
    [
        ("Bash", {"command": "pytest -q"}, "▸ Bash: pytest -q"),
        ("Read", {"file_path": "/src/app.py"}, "▸ Read: /src/app.py"),
        ("Grep", {"pattern": "TODO", "path": "src"}, "▸ Grep: TODO"),
        ("mcp__deck__spawn_agent", {"prompt": "write tests"}, "▸ deck spawn_agent: write tests"),
        ("TodoWrite", {}, "▸ TodoWrite"),
        ("Bash", {"command": "echo a\n  echo b"}, "▸ Bash: echo a echo b"),
    ],
)
def test_tool_lines(tool: str, tool_input: dict[str, str], line: str) -> None:
    assert tool_line(tool, tool_input) == line


def test_a_long_tool_detail_is_cut_to_one_line() -> None:
    line = tool_line("Bash", {"command": "x" * 500})
    assert len(line) < 140 and line.endswith("…") and "\n" not in line


def test_parts_join_with_tool_lines_together_and_text_apart() -> None:
    draft = append_part("", "Looking.", tool=False, last_was_tool=False)
    draft = append_part(draft, "▸ Bash: ls", tool=True, last_was_tool=False)
    draft = append_part(draft, "▸ Read: a.py", tool=True, last_was_tool=True)
    draft = append_part(draft, "Done.", tool=False, last_was_tool=True)
    assert draft == "Looking.\n\n▸ Bash: ls\n▸ Read: a.py\n\nDone."


def test_prompts_say_who_answered() -> None:
    asked = approval_text("fixer", "Bash", {"command": "rm -rf build"}, "asks: default")
    assert asked.startswith("🔐 **fixer** asks to use Bash: rm -rf build")
    allowed = resolved_text(asked, "allowed", "user:bridge:discord:42:alice", None)
    assert allowed.endswith("✅ Allowed by alice.")
    denied = resolved_text(asked, "denied", "user:bridge:discord:42:alice", "not now")
    assert denied.endswith("⛔ Denied by alice: not now")
    expired = resolved_text(asked, "expired", "timeout", None)
    assert expired.endswith("⌛ Denied: nobody answered before the timeout.")
    assert resolved_text(asked, "denied", "user:cli", None).endswith("⛔ Denied by cli.")
    assert resolved_text(asked, "allowed", "user:web:bob", None).endswith("Allowed by bob via web.")
