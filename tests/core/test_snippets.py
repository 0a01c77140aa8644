import re

from hypothesis import given
from hypothesis import strategies as st

from agentdeck.core.snippets import snippet_parts


def test_marked_terms_come_apart_from_the_text() -> None:
    assert snippet_parts("the [flaky] test in [ci]") == [
        ("the ", False),
        ("flaky", True),
        (" test in ", False),
        ("ci", True),
    ]
    assert snippet_parts("") == []
    assert snippet_parts("no marks [but an unclosed one") == [
        ("no marks [but an unclosed one", False)
    ]


@given(st.text(alphabet="ab[] ", max_size=16))
def test_marks_are_found_where_the_index_s_pattern_finds_them(snippet: str) -> None:
    expected: list[tuple[str, bool]] = []
    at = 0
    for match in re.finditer(r"\[([^\[\]]*)\]", snippet):
        if match.start() > at:
            expected.append((snippet[at : match.start()], False))
        expected.append((match.group(1), True))
        at = match.end()
    if at < len(snippet):
        expected.append((snippet[at:], False))
    assert snippet_parts(snippet) == expected
