"""``agentdeck diff`` in a terminal: the patch coloured as git colours it, and
nothing but colour added."""

from __future__ import annotations

import re

from agentdeck.cli.diff import colored


def test_the_colours_only_add_escapes() -> None:
    patch = (
        "diff --git a/calc.py b/calc.py\nindex 1..2 100644\n--- a/calc.py\n+++ b/calc.py\n"
        "@@ -1,2 +1,2 @@ def add(a, b):\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    )
    shown = colored(patch)
    assert "\x1b[31m-    return a - b\x1b[m" in shown and "\x1b[32m+    return a + b\x1b[m" in shown
    assert "\x1b[1m--- a/calc.py\x1b[m" in shown and "\x1b[36m@@ -1,2 +1,2 @@\x1b[m" in shown
    assert re.sub(r"\x1b\[[0-9;]*m", "", shown) == patch
