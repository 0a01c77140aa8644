"""``agentdeck bridge discord``: the token, the allow-lists, and the bridge run.

The token comes from ``AGENTDECK_DISCORD_TOKEN`` or a file only its owner can
read; it is never logged, and no error message carries it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from agentdeck.bridges.core import Bridge, BridgeConfig
from agentdeck.bridges.daemon_client import DaemonClient
from agentdeck.bridges.setup import bridge_config as shared_config
from agentdeck.bridges.setup import read_secret
from agentdeck.errors import ConfigError
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
    logged and the daemon serves on."""
    try:
        await serve(settings)
    except Exception:  # the daemon outlives its bridge
        logger.exception("the Discord bridge stopped; the daemon serves on")


async def serve(settings: Settings) -> None:
    """Run the Discord bridge until the gateway or the bridge stops."""
    from agentdeck.bridges.discord.bot import DeckBot, Frontend
    from agentdeck.bridges.discord.platform import DiscordPlatform

    token = read_token(settings)
    config = bridge_config(settings)
    client = DaemonClient.for_home(settings)
    bot = DeckBot()
    platform = DiscordPlatform(bot.resolve)
    bridge = Bridge(platform, client, settings.bridges_dir / "discord.json", config)
    bot.attach(Frontend(bridge, frozenset(settings.discord_guilds)))
    logger.info(
        "Discord bridge: %d guild(s), %d channel(s), daemon at %s",
        len(settings.discord_guilds),
        len(config.channels),
        client.url,
    )
    try:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(bridge.run(), name="bridge")
            tg.create_task(bot.start(token), name="discord-gateway")
    finally:
        with contextlib.suppress(Exception):
            await bot.close()
        await platform.close()
        await client.close()
