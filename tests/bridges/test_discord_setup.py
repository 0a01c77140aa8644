"""The Discord bridge's token and allow-lists: where the token may come from,
and that it reaches no log and no error message."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from agentdeck.bridges.discord.setup import bridge_config, read_token
from agentdeck.errors import ConfigError
from agentdeck.settings import Settings
from tests.conftest import make_settings
from tests.support.deckcli import deck, deck_env
from tests.support.waiting import eventually

TOKEN = "MTIzNDU2Nzg5.secret-discord-token.XYZ"


def test_the_token_comes_from_the_environment_first(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, discord_token=SecretStr(f" {TOKEN}\n"))
    assert read_token(settings) == TOKEN


def test_a_token_file_must_be_private(tmp_path: Path) -> None:
    path = tmp_path / "discord-token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o644)
    settings = make_settings(tmp_path, discord_token_file=path)
    with pytest.raises(ConfigError) as refused:
        read_token(settings)
    assert "may be read by others (mode 644)" in str(refused.value)
    assert f"chmod 600 {path}" in str(refused.value)
    assert TOKEN not in str(refused.value)
    path.chmod(0o600)
    assert read_token(settings) == TOKEN


def test_no_token_or_an_empty_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no Discord bot token"):
        read_token(make_settings(tmp_path))
    empty = tmp_path / "empty"
    empty.write_text("\n")
    empty.chmod(0o600)
    with pytest.raises(ConfigError, match="is empty"):
        read_token(make_settings(tmp_path, discord_token_file=empty))
    with pytest.raises(ConfigError, match="cannot read"):
        read_token(make_settings(tmp_path, discord_token_file=tmp_path / "missing"))


def test_a_bridge_that_would_serve_nothing_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="would serve no channel"):
        bridge_config(make_settings(tmp_path, discord_guilds=[1]))
    config = bridge_config(
        make_settings(
            tmp_path,
            discord_guilds=[1],
            discord_channels=[100, 200],
            bridge_approvers=["role:deckhands", "42"],
            bridge_scenario="chat",
            bridge_template="reviewer",
        )
    )
    assert config.channels == {"100", "200"}
    assert config.approvers == {"role:deckhands", "42"}
    assert config.agent == {"scenario": "chat"} and config.template == "reviewer"


def test_the_settings_log_shows_the_token_as_stars(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, discord_token=SecretStr(TOKEN))
    assert settings.redacted()["discord_token"] == "***"
    assert TOKEN not in repr(settings) and TOKEN not in str(settings.redacted())


def test_the_command_never_prints_or_logs_the_token(tmp_path: Path) -> None:
    env = deck_env(
        tmp_path,
        AGENTDECK_DISCORD_TOKEN=TOKEN,
        AGENTDECK_DISCORD_GUILDS="[1]",
        AGENTDECK_DISCORD_CHANNELS="[100]",
        AGENTDECK_LOG_LEVEL="DEBUG",
    )
    done = deck(env, "bridge", "discord", timeout=60)
    assert done.code == 1
    assert "no agentdeck daemon runs" in done.err
    assert "discord_token" in done.err, "the effective settings are logged (redacted)"
    assert TOKEN not in done.out and TOKEN not in done.err
    logs = Path(env["AGENTDECK_HOME"]) / "logs"
    for log in logs.rglob("*") if logs.exists() else []:
        assert TOKEN not in log.read_text(errors="replace")


def test_settings_read_the_discord_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_DISCORD_TOKEN", TOKEN)
    monkeypatch.setenv("AGENTDECK_DISCORD_CHANNELS", "[100, 200]")
    monkeypatch.setenv("AGENTDECK_BRIDGE_ON_BUSY", "interrupt")
    settings = Settings.load()
    assert settings.discord_channels == [100, 200] and settings.bridge_on_busy == "interrupt"
    monkeypatch.setenv("AGENTDECK_BRIDGE_ON_BUSY", "shout")
    with pytest.raises(ConfigError) as bad:
        Settings.load()
    assert "AGENTDECK_BRIDGE_ON_BUSY" in str(bad.value) and TOKEN not in str(bad.value)


@pytest.mark.anyio
async def test_the_bot_asks_for_few_intents_and_registers_the_slash_commands() -> None:
    from agentdeck.bridges.discord.bot import DeckBot, Frontend

    bot = DeckBot()
    bot.attach(Frontend(None, frozenset({1})))  # type: ignore[arg-type]
    intents = bot.intents
    assert intents.message_content and intents.guilds and intents.guild_messages
    assert not intents.members and not intents.presences and not intents.dm_messages
    commands = {c.name: c for c in bot.tree.get_commands()}
    assert set(commands) == {
        "new", "project", "status", "stop", "resume", "cost", "approve", "memory",
    }  # fmt: skip
    params = {
        name: [(p.name, p.required) for p in getattr(c, "parameters", [])]
        for name, c in commands.items()
    }
    assert params["new"] == [("prompt", False), ("agent_template", False)]
    assert params["project"] == [("path", True)] and params["memory"] == [("query", True)]
    assert params["status"] == []


def test_the_daemon_refuses_to_start_with_a_bridge_that_cannot_run(tmp_path: Path) -> None:
    env = deck_env(tmp_path, AGENTDECK_BRIDGES='["discord"]', AGENTDECK_DISCORD_TOKEN=TOKEN)
    done = deck(env, "up", timeout=60)
    assert done.code == 1
    assert "the Discord bridge would serve no channel" in done.err
    assert TOKEN not in done.out + done.err
    assert not (Path(env["AGENTDECK_HOME"]) / "daemon.json").exists()
    unknown = deck(deck_env(tmp_path, AGENTDECK_BRIDGES='["irc"]'), "up", timeout=60)
    assert unknown.code == 1 and "AGENTDECK_BRIDGES" in unknown.err


@pytest.mark.anyio
async def test_a_bridge_beside_the_daemon_that_cannot_reach_discord_leaves_it_serving(
    tmp_path: Path,
) -> None:
    """No Discord here: the login fails (the name does not resolve), twice, which
    is logged in one line each without the token, and the daemon serves on."""
    env = deck_env(
        tmp_path,
        AGENTDECK_BRIDGE_CONNECT_ATTEMPTS="2",
        AGENTDECK_BRIDGES='["discord"]',
        AGENTDECK_DISCORD_TOKEN=TOKEN,
        AGENTDECK_DISCORD_GUILDS="[1]",
        AGENTDECK_DISCORD_CHANNELS="[2]",
        AGENTDECK_LOG_LEVEL="DEBUG",
    )
    started = deck(env, "up", "--detach", timeout=60)
    assert started.code == 0, started.err
    log = Path(env["AGENTDECK_HOME"]) / "logs" / "daemon.log"
    try:

        async def bridge_stopped() -> bool:
            return log.exists() and "the Discord bridge stopped" in log.read_text()

        await eventually(bridge_stopped, timeout=60, what="the bridge's failure in the log")
        status = deck(env, "status", timeout=60)
        assert status.code == 0 and status.out.startswith("agentdeck daemon on "), status.out
    finally:
        deck(env, "down", timeout=60)
    text = log.read_text()
    assert "Discord: logging in failed (" in text and "; try 2 of 2 in 1 s" in text
    assert "the Discord bridge stopped; the daemon serves on: the Discord bridge stopped: " in text
    assert "Traceback" not in text
    assert "discord_token': '***'" in text, "the settings are logged, the token as stars"
    assert TOKEN not in text and TOKEN not in started.out + started.err
