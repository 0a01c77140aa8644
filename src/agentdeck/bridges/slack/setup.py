"""``agentdeck bridge slack``: the tokens, the allow-list, and the bridge run.

Two tokens: the bot token (``xoxb-``, the Web API) and the app-level token
(``xapp-``, Socket Mode), each from ``AGENTDECK_SLACK_*_TOKEN`` or a file only
its owner can read. Neither is ever logged, and no error message carries one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from pydantic import SecretStr

from agentdeck.bridges import daemon
from agentdeck.bridges.core import Bridge
from agentdeck.bridges.host import BridgeConfig
from agentdeck.bridges.reconnect import Backoff, reason
from agentdeck.bridges.setup import bridge_config as shared_config
from agentdeck.bridges.setup import read_secret
from agentdeck.errors import AgentdeckError, ConfigError
from agentdeck.settings import Settings

logger = logging.getLogger(__name__)


def _secret(value: SecretStr | None, path: Path | None, what: str, var: str, prefix: str) -> str:
    token = read_secret(value, path, what=f"Slack {what}", var=var)
    if not token.startswith(prefix):
        raise ConfigError(f"the Slack {what} does not start with {prefix!r}", hint=f"check {var}")
    return token


def read_tokens(settings: Settings) -> tuple[str, str]:
    """(bot token, app-level token)."""
    bot = _secret(
        settings.slack_bot_token,
        settings.slack_bot_token_file,
        "bot token",
        "AGENTDECK_SLACK_BOT_TOKEN",
        "xoxb-",
    )
    app = _secret(
        settings.slack_app_token,
        settings.slack_app_token_file,
        "app-level token",
        "AGENTDECK_SLACK_APP_TOKEN",
        "xapp-",
    )
    return bot, app


def bridge_config(settings: Settings) -> BridgeConfig:
    """The core's configuration; a bridge that would serve nothing is refused."""
    if not settings.slack_channels:
        raise ConfigError(
            "the Slack bridge would serve no channel",
            hint='set AGENTDECK_SLACK_CHANNELS (a JSON list of channel ids, e.g. ["C0123ABCD"])',
        )
    return shared_config(settings, settings.slack_channels)


def check(settings: Settings) -> None:
    """Refuse, before anything starts, a bridge that cannot run."""
    read_tokens(settings)
    bridge_config(settings)


async def serve_beside_daemon(settings: Settings) -> None:
    """The bridge in the daemon's process: a failure is logged (in one line when it
    is one the bridge names), the daemon serves on."""
    try:
        await serve(settings)
    except AgentdeckError as exc:
        logger.error("the Slack bridge stopped; the daemon serves on: %s", exc)
    except Exception:  # the daemon outlives its bridge
        logger.exception("the Slack bridge stopped; the daemon serves on")


async def serve(settings: Settings) -> None:
    """Run the Slack bridge until it is stopped, or until Slack stays out of reach
    (``PlatformUnreachable``, after AGENTDECK_BRIDGE_CONNECT_ATTEMPTS tries)."""
    from slack_sdk.web.async_client import AsyncWebClient

    from agentdeck.bridges.slack.app import Frontend, build_app
    from agentdeck.bridges.slack.platform import SlackPlatform
    from agentdeck.bridges.slack.socket import BoundedSocketModeClient, Handler

    bot_token, app_token = read_tokens(settings)
    config = bridge_config(settings)
    deck = daemon.for_home(settings)
    web = AsyncWebClient(token=bot_token, base_url=settings.slack_api_url)
    bridge = Bridge(SlackPlatform(web), deck, settings.bridges_dir / "slack.json", config)
    socket = BoundedSocketModeClient(app_token, web, Backoff.from_settings(settings))
    handler = Handler(build_app(Frontend(bridge, web)), socket)
    logger.info("Slack bridge: %d channel(s), daemon at %s", len(config.channels), deck.http.url)
    try:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(bridge.run(), name="bridge")
            tg.create_task(socket.run(), name="slack-socket-mode")
    except BaseExceptionGroup as group:
        raise reason(group) from None
    finally:
        with contextlib.suppress(Exception):
            await handler.close_async()  # type: ignore[no-untyped-call]
        await deck.aclose()
