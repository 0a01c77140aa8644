"""Answers to a Claude Code process that can no longer hear them are not sent.

The SDK writes a callback's answer (a permission decision, a hook's output, an
in-process MCP tool's result) to the CLI's stdin from a task of its own. When
the deck is terminating the process (kill, a guardrail, the daemon suspending
it) or has closed its input, that write fails inside the SDK, where nothing can
catch it. A held callback, once it has its answer, checks whether the process
can still hear it and, if not, waits instead of returning: the SDK cancels it
when the client closes, and nothing is written. What the SDK answers on its own
(an in-process MCP server's notifications) goes through ``HeldClient``, whose
transport drops such an answer when the dying process cannot take it, instead of
raising in a task nothing awaits.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

from claude_agent_sdk import ClaudeSDKClient, CLIConnectionError
from claude_agent_sdk.types import HookMatcher

T = TypeVar("T")
Stopping = Callable[[], bool]

logger = logging.getLogger(__name__)


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


_RESPONSE = '{"type": "control_response"'


class HeldClient(ClaudeSDKClient):
    """A client whose transport drops an answer a process can no longer take (it is
    being stopped, or gone)."""

    @property
    def _transport(self) -> Any:
        return self.__dict__.get("_held_transport")

    @_transport.setter
    def _transport(self, transport: Any) -> None:
        if transport is not None:
            write = transport.write

            async def quiet_write(data: str) -> None:
                try:
                    await write(data)
                except CLIConnectionError as exc:
                    # Only an answer to the CLI is dropped (the process is stopping or
                    # gone, a Ctrl-C say): it is written from a task nothing awaits,
                    # where raising only prints "Task exception was never retrieved".
                    # A request or a message still fails its caller.
                    if not data.startswith(_RESPONSE):
                        raise
                    logger.debug("an answer to a Claude Code that is gone: %s", exc)

            transport.write = quiet_write
        self.__dict__["_held_transport"] = transport
