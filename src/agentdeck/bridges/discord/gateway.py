"""The bridge's connection to Discord, made again after a failure.

Each try is a fresh ``DeckBot``: log in (within the try's deadline; discord.py
sets none on HTTP), then the gateway, which discord.py is told not to reconnect
itself (it would retry for ever, a traceback each time): a drop comes back here,
is one line in the log and a try of ``reconnect.Attempts``. A try that reached
the gateway (``on_ready``) starts the count anew. What no retry can fix (the
token refused, an intent not enabled) stops the bridge at once, in one line.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import discord

from agentdeck.bridges.discord.bot import DeckBot, Frontend
from agentdeck.bridges.reconnect import Attempts, Backoff
from agentdeck.errors import AgentdeckError, ConfigError

logger = logging.getLogger(__name__)

# Gateway close codes no retry fixes (Discord's docs: authentication failed, invalid
# shard, sharding required, invalid API version, invalid or disallowed intents).
FATAL_CLOSE_CODES = frozenset({4004, 4010, 4011, 4012, 4013, 4014})


def _transient(exc: BaseException) -> bool:
    """A failure another try may get past: no answer, a broken connection, Discord's
    own trouble (5xx) or its rate limit."""
    if isinstance(exc, discord.ConnectionClosed):
        return exc.code not in FATAL_CLOSE_CODES
    if isinstance(exc, discord.HTTPException):
        return exc.status >= 500 or exc.status == 429
    return isinstance(exc, OSError | aiohttp.ClientError | discord.GatewayNotFound)


def _refused(exc: BaseException) -> AgentdeckError:
    """What Discord refused, in one line."""
    if isinstance(exc, discord.LoginFailure):
        return ConfigError(
            "Discord refused the bot token",
            hint="check AGENTDECK_DISCORD_TOKEN (the bot's token, from the Developer Portal)",
        )
    if isinstance(exc, discord.PrivilegedIntentsRequired) or (
        isinstance(exc, discord.ConnectionClosed) and exc.code in (4013, 4014)
    ):
        return ConfigError(
            "Discord refused the message content intent",
            hint="enable it for the bot in the Developer Portal (Bot > Privileged Gateway Intents)",
        )
    if isinstance(exc, discord.ConnectionClosed):
        return AgentdeckError(f"Discord closed the gateway (code {exc.code}: {exc.reason})")
    status = getattr(exc, "status", "?")
    text = " ".join(str(getattr(exc, "text", "") or exc).split())[:200]
    return AgentdeckError(f"Discord refused the bridge ({status}: {text})")


class Gateway:
    """The Discord client of the moment, for the platform to resolve channels with."""

    def __init__(self, token: str, backoff: Backoff) -> None:
        self.frontend: Frontend | None = None
        self.backoff = backoff
        self._token = token
        self.bot: DeckBot | None = None
        self._synced = False  # the slash commands, by a login of this run
        self.attempts = Attempts("Discord", backoff)

    def attach(self, frontend: Frontend) -> None:
        self.frontend = frontend

    async def resolve(self, channel_id: int) -> Any:
        if self.bot is None:
            raise ConnectionError("the bridge is not connected to Discord")
        return await self.bot.resolve(channel_id)

    async def run(self) -> None:
        """Serve until cancelled, or raise once Discord stays out of reach."""
        while True:
            assert self.frontend is not None, "attach a frontend first"
            bot = self.bot = DeckBot(sync_commands=not self._synced)
            bot.attach(self.frontend)
            what = "logging in"
            try:
                async with asyncio.timeout(self.backoff.timeout):
                    await bot.login(self._token)
                self._synced = True
                what = "the gateway"
                await bot.connect(reconnect=False)
                raise ConnectionError("the gateway closed the connection")  # a clean close
            except Exception as exc:
                if not _transient(exc):
                    if isinstance(exc, discord.DiscordException):
                        raise _refused(exc) from None
                    raise
                if bot.was_ready:
                    self.attempts.succeeded()
                await bot.close()
                await self.attempts.failed(what, exc)
            finally:
                await bot.close()

    async def close(self) -> None:
        if self.bot is not None:
            await self.bot.close()
