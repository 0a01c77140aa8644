"""``agentdeck bridge discord``: the token, the allow-lists, and the bridge run.

The token comes from ``AGENTDECK_DISCORD_TOKEN`` or a file only its owner can
read; it is never logged, and no error message carries it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import stat
from typing import Any

from agentdeck.bridges.core import Bridge, BridgeConfig
from agentdeck.bridges.daemon_client import DaemonClient
from agentdeck.errors import ConfigError
from agentdeck.settings import Settings

logger = logging.getLogger(__name__)


def read_token(settings: Settings) -> str:
    if settings.discord_token is not None and settings.discord_token.get_secret_value().strip():
        return settings.discord_token.get_secret_value().strip()
    path = settings.discord_token_file
    if path is None:
        raise ConfigError(
            "no Discord bot token",
            hint="set AGENTDECK_DISCORD_TOKEN, or AGENTDECK_DISCORD_TOKEN_FILE to a file "
            "of mode 0600 that holds it",
        )
    path = path.expanduser()
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(
                f"the Discord token file {path} may be read by others "
                f"(mode {stat.S_IMODE(mode):o}); the bridge refuses it",
                hint=f"chmod 600 {path}",
            )
        token = path.read_text().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read the Discord token file {path}: {exc.strerror}") from None
    if not token:
        raise ConfigError(f"the Discord token file {path} is empty")
    return token


def bridge_config(settings: Settings) -> BridgeConfig:
    """The core's configuration from the settings; a bridge that would serve
    nothing is refused, not started."""
    if not settings.discord_guilds or not settings.discord_channels:
        raise ConfigError(
            "the Discord bridge would serve no channel",
            hint="set AGENTDECK_DISCORD_GUILDS and AGENTDECK_DISCORD_CHANNELS (JSON lists of ids)",
        )
    agent: dict[str, Any] = {}
    if settings.bridge_project is not None:
        agent["cwd"] = str(settings.bridge_project.expanduser())
    if settings.bridge_profile:
        agent["profile"] = settings.bridge_profile
    if settings.bridge_template:
        agent["agent"] = settings.bridge_template
    if settings.bridge_scenario:
        agent["scenario"] = settings.bridge_scenario
    return BridgeConfig(
        channels=frozenset(str(c) for c in settings.discord_channels),
        approvers=frozenset(settings.bridge_approvers),
        admins=frozenset(settings.bridge_admins),
        project_roots=tuple(str(p) for p in settings.bridge_project_roots),
        on_busy=settings.bridge_on_busy,
        edit_interval=settings.bridge_edit_interval_seconds,
        attach_over=settings.bridge_attach_over,
        agent=agent,
    )


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
