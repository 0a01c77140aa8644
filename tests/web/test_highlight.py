"""The diff and rewind pages' highlighting runs in a thread, and renders the same."""

from __future__ import annotations

import asyncio

import pytest

from agentdeck.web.pages_diff import PAGE_PATCH_CHARS, highlighted, highlighted_in_thread

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


async def test_the_loop_serves_others_while_a_large_patch_is_highlighted() -> None:
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0)

    async def render() -> int:
        await highlighted_in_thread(_patch(PAGE_PATCH_CHARS // 40))
        done.set()
        return ticks

    async with asyncio.TaskGroup() as tg:
        tg.create_task(ticker())
        at_the_end = tg.create_task(render())
    # On the loop, the render would run in one step: the ticker at most once before it.
    assert at_the_end.result() > 1
