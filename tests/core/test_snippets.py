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
