"""A client that drops an answer its Claude Code process can no longer take.

What the SDK answers on its own (an in-process MCP server's notifications) is
written from a task of the SDK's; when the deck is stopping the process, that
write fails where nothing can catch it. ``HeldClient``'s transport drops such an
answer instead of raising in a task nothing awaits (``callbacks`` holds back our
own callbacks' answers).
"""

from __future__ import annotations

import logging
from typing import Any

from claude_agent_sdk import ClaudeSDKClient, CLIConnectionError

logger = logging.getLogger(__name__)

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
