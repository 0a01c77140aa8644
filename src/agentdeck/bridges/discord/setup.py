"""``agentdeck bridge discord``: the token, the allow-lists, and the bridge run.

The token comes from ``AGENTDECK_DISCORD_TOKEN`` or a file only its owner can
read; it is never logged, and no error message carries it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from agentdeck.bridges import daemon
from agentdeck.bridges.core import Bridge
from agentdeck.bridges.host import BridgeConfig
from agentdeck.bridges.reconnect import Backoff, reason
from agentdeck.bridges.setup import bridge_config as shared_config
from agentdeck.bridges.setup import read_secret
from agentdeck.errors import AgentdeckError, ConfigError
from agentdeck.settings import Settings

logger = logging.getLogger(__name__)


def read_token(settings: Settings) -> str:
    return read_secret(
        settings.discord_token,
        settings.discord_token_file,
        what="Discord bot token",
        var="AGENTDECK_DISCORD_TOKEN",
    )


def bridge_config(settings: Settings) -> BridgeConfig:
    """The core's configuration from the settings; a bridge that would serve
    nothing is refused, not started."""
    if not settings.discord_guilds or not settings.discord_channels:
        raise ConfigError(
            "the Discord bridge would serve no channel",
            hint="set AGENTDECK_DISCORD_GUILDS and AGENTDECK_DISCORD_CHANNELS (JSON lists of ids)",
        )
    return shared_config(settings, settings.discord_channels)


def check(settings: Settings) -> None:
    """Refuse, before anything starts, a bridge that cannot run."""
    read_token(settings)
    bridge_config(settings)


async def serve_beside_daemon(settings: Settings) -> None:
    """The bridge in the daemon's process (``AGENTDECK_BRIDGES``): a failure is
    logged (in one line when it is one the bridge names) and the daemon serves on."""
    try:
        await serve(settings)
    except AgentdeckError as exc:
        logger.error("the Discord bridge stopped; the daemon serves on: %s", exc)
    except Exception:  # the daemon outlives its bridge
        logger.exception("the Discord bridge stopped; the daemon serves on")


async def serve(settings: Settings) -> None:
    """Run the Discord bridge until it is stopped, or until Discord stays out of
    reach (``PlatformUnreachable``, after AGENTDECK_BRIDGE_CONNECT_ATTEMPTS tries)."""
    import discord

    from agentdeck.bridges.discord.bot import Frontend
    from agentdeck.bridges.discord.gateway import Gateway
    from agentdeck.bridges.discord.platform import DiscordPlatform

    token = read_token(settings)
    config = bridge_config(settings)
    deck = daemon.for_home(settings)
    # discord.py reads its API's address from this class attribute only.
    discord.http.Route.BASE = settings.discord_api_url.rstrip("/")
    gateway = Gateway(token, Backoff.from_settings(settings))
    platform = DiscordPlatform(gateway.resolve)
    bridge = Bridge(platform, deck, settings.bridges_dir / "discord.json", config)
    gateway.attach(Frontend(bridge, frozenset(settings.discord_guilds)))
    logger.info(
        "Discord bridge: %d guild(s), %d channel(s), daemon at %s",
        len(settings.discord_guilds),
        len(config.channels),
        deck.http.url,
    )
    try:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(bridge.run(), name="bridge")
            tg.create_task(gateway.run(), name="discord-gateway")
    except BaseExceptionGroup as group:
        raise reason(group) from None
    finally:
        with contextlib.suppress(Exception):
            await gateway.close()
        await platform.close()
        await deck.aclose()
