"""A diff is scrubbed as the files it shows: its column hides no secret."""

from __future__ import annotations

import pytest

from agentdeck.core.patch_scrub import scrub_patch
from agentdeck.core.redact import scrub
from tests.runner.test_scrubbing import SECRETS_TXT, leaked

HEAD = "diff --git a/{0} b/{0}\nindex 0000000..abdc5e0 100644\n--- a/{0}\n+++ b/{0}\n"


def _patch(mark: str, text: str, name: str = "notes.txt") -> str:
    lines = text.rstrip("\n").split("\n")
    hunk = f"@@ -1,{len(lines)} +1,{len(lines)} @@\n"
    return HEAD.format(name) + hunk + "\n".join(mark + line for line in lines) + "\n"


@pytest.mark.parametrize("mark", ["+", "-", " "])
def test_every_secret_of_the_corpus_in_a_hunk_is_redacted(mark: str) -> None:
    patch = _patch(mark, SECRETS_TXT)
    shown = scrub_patch(patch)
    assert leaked(shown) == []
    assert "[REDACTED:" in shown and scrub_patch(shown) == shown
    # Each line keeps its column; the headers are as they were.
    assert shown.startswith(HEAD.format("notes.txt") + "@@ ")
    body = shown.split("@@\n", 1)[1].rstrip("\n").split("\n")
    assert all(line.startswith(mark) for line in body)


def test_the_column_hid_secrets_from_a_plain_scrub() -> None:
    # ``+mongodb+srv://admin:…@``, ``+machine h login u password p``: why a diff
    # is not scrubbed as one text.
    assert leaked(scrub(_patch("+", SECRETS_TXT))) != []


def test_a_patch_without_secrets_is_unchanged() -> None:
    old = "def add(a, b):\n    return a - b\n"
    new = "def add(a, b):\n    return a + b\n"
    patch = (
        HEAD.format("calc.py")
        + "@@ -1,2 +1,2 @@\n def add(a, b):\n-"
        + old.split("\n")[1]
        + "\n+"
        + new.split("\n")[1]
        + "\n\\ No newline at end of file\n"
    )
    assert scrub_patch(patch) == patch
    assert scrub_patch("") == ""
