"""The Slack bridge's tokens and allow-list: where the tokens may come from, and
that they reach no log and no error message; the app's listeners."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from agentdeck.bridges.slack.setup import bridge_config, read_tokens
from agentdeck.errors import ConfigError
from agentdeck.settings import Settings
from tests.conftest import make_settings
from tests.support.deckcli import deck, deck_env

BOT = "xoxb-1234-5678-secret-bot-token"
APP = "xapp-1-A0001-9999-secret-app-token"


def test_the_tokens_come_from_the_environment_or_private_files(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path, slack_bot_token=SecretStr(f" {BOT}\n"), slack_app_token=SecretStr(APP)
    )
    assert read_tokens(settings) == (BOT, APP)
    path = tmp_path / "app-token"
    path.write_text(APP + "\n")
    path.chmod(0o640)
    from_file = make_settings(tmp_path, slack_bot_token=SecretStr(BOT), slack_app_token_file=path)
    with pytest.raises(ConfigError) as refused:
        read_tokens(from_file)
    assert "may be read by others (mode 640)" in str(refused.value)
    assert f"chmod 600 {path}" in str(refused.value) and APP not in str(refused.value)
    path.chmod(0o600)
    assert read_tokens(from_file) == (BOT, APP)


def test_a_missing_or_swapped_token_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no Slack bot token"):
        read_tokens(make_settings(tmp_path))
    with pytest.raises(ConfigError, match="no Slack app-level token"):
        read_tokens(make_settings(tmp_path, slack_bot_token=SecretStr(BOT)))
    swapped = make_settings(
        tmp_path, slack_bot_token=SecretStr(APP), slack_app_token=SecretStr(BOT)
    )
    with pytest.raises(ConfigError, match="does not start with 'xoxb-'") as bad:
        read_tokens(swapped)
    assert APP not in str(bad.value) and BOT not in str(bad.value)


def test_a_bridge_that_would_serve_nothing_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="would serve no channel"):
        bridge_config(make_settings(tmp_path))
    config = bridge_config(
        make_settings(
            tmp_path,
            slack_channels=["C0123", "C0456"],
            bridge_approvers=["U0ALICE"],
            bridge_scenario="chat",
        )
    )
    assert config.channels == {"C0123", "C0456"} and config.approvers == {"U0ALICE"}
    assert config.agent == {"scenario": "chat"}


def test_settings_read_the_slack_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_SLACK_BOT_TOKEN", BOT)
    monkeypatch.setenv("AGENTDECK_SLACK_CHANNELS", '["C0123"]')
    monkeypatch.setenv("AGENTDECK_BRIDGES", '["discord", "slack"]')
    settings = Settings.load()
    assert settings.slack_channels == ["C0123"] and settings.bridges == ["discord", "slack"]
    assert settings.redacted()["slack_bot_token"] == "***"
    assert BOT not in repr(settings) and BOT not in str(settings.redacted())


def test_the_command_never_prints_or_logs_the_tokens(tmp_path: Path) -> None:
    env = deck_env(
        tmp_path,
        AGENTDECK_SLACK_BOT_TOKEN=BOT,
        AGENTDECK_SLACK_APP_TOKEN=APP,
        AGENTDECK_SLACK_CHANNELS='["C0123"]',
        AGENTDECK_LOG_LEVEL="DEBUG",
    )
    done = deck(env, "bridge", "slack", timeout=60)
    assert done.code == 1
    assert "no agentdeck daemon runs" in done.err
    assert "slack_bot_token" in done.err, "the effective settings are logged (redacted)"
    for token in (BOT, APP):
        assert token not in done.out and token not in done.err
        logs = Path(env["AGENTDECK_HOME"]) / "logs"
        for log in logs.rglob("*") if logs.exists() else []:
            assert token not in log.read_text(errors="replace")


def test_the_daemon_refuses_to_start_with_a_slack_bridge_that_cannot_run(tmp_path: Path) -> None:
    env = deck_env(
        tmp_path,
        AGENTDECK_BRIDGES='["slack"]',
        AGENTDECK_SLACK_BOT_TOKEN=BOT,
        AGENTDECK_SLACK_APP_TOKEN=APP,
    )
    done = deck(env, "up", timeout=60)
    assert done.code == 1
    assert "the Slack bridge would serve no channel" in done.err
    assert BOT not in done.out + done.err and APP not in done.out + done.err
    assert not (Path(env["AGENTDECK_HOME"]) / "daemon.json").exists()


@pytest.mark.anyio
async def test_the_app_listens_for_messages_buttons_modals_and_the_command() -> None:
    from slack_sdk.web.async_client import AsyncWebClient

    from agentdeck.bridges.platform import Conversation
    from agentdeck.bridges.slack.app import Frontend, build_app, modal

    app = build_app(Frontend(None, AsyncWebClient(token=BOT)))  # type: ignore[arg-type]
    assert len(app._async_listeners) == 4
    box = modal("reply", "ask1", Conversation("C0123", "1.5"))
    assert box["callback_id"] == "agentdeck:answer:ask1"
    assert box["private_metadata"] == '{"c": "C0123/1.5"}'
    [field] = box["blocks"]
    assert field["optional"] is False
    assert modal("deny", "r1", Conversation("C0123"))["blocks"][0]["optional"] is True
