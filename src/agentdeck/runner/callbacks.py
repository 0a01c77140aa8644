"""Answers to a Claude Code process that can no longer hear them are not sent.

The SDK writes a callback's answer (a permission decision, a hook's output, an
in-process MCP tool's result) to the CLI's stdin from a task of its own. When
the deck is terminating the process (kill, a guardrail, the daemon suspending
it) or has closed its input, that write fails inside the SDK, where nothing can
catch it. A held callback, once it has its answer, checks whether the process
can still hear it and, if not, waits instead of returning: the SDK cancels it
when the client closes, and nothing is written. What the SDK answers on its own
goes through ``sdk_private.held_client``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from claude_agent_sdk.types import HookMatcher


T = TypeVar("T")
Stopping = Callable[[], bool]


def held(stopping: Stopping, callback: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    @functools.wraps(callback)
    async def answer(*args: Any) -> T:
        result = await callback(*args)
        if stopping():
            await asyncio.Event().wait()  # cancelled when the SDK closes
        return result

    return answer


def held_hooks(
    stopping: Stopping, hooks: dict[Any, list[HookMatcher]] | None
) -> dict[Any, list[HookMatcher]] | None:
    if hooks is None:
        return None
    return {
        event: [replace(m, hooks=[held(stopping, h) for h in m.hooks]) for m in matchers]
        for event, matchers in hooks.items()
    }
