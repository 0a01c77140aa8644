"""The diff and rewind pages' highlighting runs in a thread, and renders the same."""

from __future__ import annotations

import asyncio
import threading

import pytest
from markupsafe import Markup

from agentdeck.web.pages_diff import PAGE_PATCH_CHARS, highlighted, highlighted_in_thread
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio

KEY = "sk-ant-api03-" + "Wq7" * 30


def _patch(lines: int) -> str:
    body = "".join(f"-old line {i}\n+new line {i} = {i * 7}\n" for i in range(lines))
    return (
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n"
        f"@@ -1,{lines} +1,{lines} @@\n+ANTHROPIC_API_KEY={KEY}\n{body}"
    )


async def test_the_rendering_is_the_one_highlighted_gives_scrubbed_and_cut() -> None:
    for patch in (_patch(3), _patch(PAGE_PATCH_CHARS // 20)):
        assert await highlighted_in_thread(patch) == highlighted(patch)
    small, cut = await highlighted_in_thread(_patch(3))
    assert not cut and KEY not in small and "new line 2" in small
    _, cut = await highlighted_in_thread(_patch(PAGE_PATCH_CHARS // 20))
    assert cut


async def test_the_loop_serves_others_while_a_large_patch_is_highlighted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The highlighting holds until the loop has served another task: on the loop
    itself it would wait for nothing that can come, and say so."""
    from agentdeck.web import pages_diff

    started, served = threading.Event(), threading.Event()

    def held(patch: str) -> tuple[Markup, bool]:
        started.set()
        assert served.wait(30), "the event loop served nothing while highlighting ran"
        return highlighted(patch)

    monkeypatch.setattr(pages_diff, "highlighted", held)
    rendering = asyncio.create_task(highlighted_in_thread(_patch(PAGE_PATCH_CHARS // 40)))

    async def highlighting() -> bool:
        return started.is_set()

    await eventually(highlighting, timeout=30, what="the highlighting to start")
    served.set()  # the loop ran this task while the highlighting was under way
    html, _ = await rendering
    assert html == highlighted(_patch(PAGE_PATCH_CHARS // 40))[0]
