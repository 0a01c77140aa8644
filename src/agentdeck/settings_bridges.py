"""The chat bridges' settings (Discord, Slack): a part of the one ``Settings``
object (``settings.py``), kept here so that each module stays small."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings


class BridgeSettings(BaseSettings):
    bridges: list[Literal["discord", "slack"]] = Field(
        default_factory=list,
        description="Chat bridges `agentdeck up` runs beside the daemon (JSON list of "
        "discord, slack). Each also runs alone with `agentdeck bridge NAME`. A bridge that is not "
        "configured stops the daemon's start; one that fails later is logged, and the "
        "daemon serves on.",
    )
    bridge_approvers: list[str] = Field(
        default_factory=list,
        description="Chat members who may answer approvals and agents' questions from a chat "
        "bridge: member ids, or role:NAME for everyone with that role (JSON list). Empty: "
        "nobody, and every request waits for the dashboard or the CLI, or its timeout.",
    )
    bridge_admins: list[str] = Field(
        default_factory=list,
        description="Chat members who may bind a channel to a project (/project): member ids "
        "or role:NAME (JSON list). Empty: nobody.",
    )
    bridge_on_busy: Literal["queue", "interrupt"] = Field(
        default="queue",
        description="A chat message that arrives while the agent works: queue (sent as the "
        "next follow-up when its turn ends) or interrupt (the turn stops, then it is sent).",
    )
    bridge_edit_interval_seconds: float = Field(
        default=1.5,
        ge=0,
        allow_inf_nan=False,
        description="Least time between two edits of the reply a chat bridge is writing "
        "(platforms rate-limit edits; Discord allows about 5 in 5 s per channel).",
    )
    bridge_attach_over: int = Field(
        default=1500,
        ge=1,
        description="A tool output longer than this (characters) is posted as an attachment "
        "to the chat; shorter ones show as the tool's one line only.",
    )
    bridge_connect_attempts: int = Field(
        default=8,
        ge=1,
        description="Tries in a row a chat bridge makes to reach its platform (Discord's API "
        "and gateway, Slack's Socket Mode) before it exits; the wait between two doubles from "
        "1 s up to AGENTDECK_BRIDGE_RETRY_MAX_SECONDS. A connection made starts the count anew.",
    )
    bridge_retry_max_seconds: float = Field(
        default=60.0,
        gt=0,
        allow_inf_nan=False,
        description="Longest wait of a chat bridge between two tries to reach its platform, "
        "or to post a message it could not post.",
    )
    bridge_connect_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        allow_inf_nan=False,
        description="How long one try of a chat bridge to reach its platform may take; a "
        "platform that does not answer by then counts as a failed try.",
    )
    bridge_project: Path | None = Field(
        default=None,
        description="Working directory of agents started from chat, until /project binds a "
        "channel to another; default: a fresh workspace for each.",
    )
    bridge_project_roots: list[Path] = Field(
        default_factory=list,
        description="Directories under which /project may bind a channel to a project "
        "(JSON list). Empty: /project is refused.",
    )
    bridge_profile: str | None = Field(
        default=None,
        description="Policy profile of agents started from chat; default: AGENTDECK_PROFILE.",
    )
    bridge_template: str | None = Field(
        default=None,
        description="Agent template of agents started from chat when /new names none.",
    )
    bridge_scenario: str | None = Field(
        default=None,
        description="Play this scripted-model scenario for agents started from chat (a demo "
        "without a Claude account); default: the real model.",
    )
    discord_token: SecretStr | None = Field(
        default=None,
        description="The Discord bot's token (or use AGENTDECK_DISCORD_TOKEN_FILE). Never logged.",
    )
    discord_token_file: Path | None = Field(
        default=None,
        description="A file holding the Discord bot's token; it must be readable by its owner "
        "only (mode 0600), or the bridge refuses it.",
    )
    discord_guilds: list[int] = Field(
        default_factory=list,
        description="Discord servers (guild ids) the bridge serves (JSON list); others are "
        "ignored. Empty: none.",
    )
    discord_channels: list[int] = Field(
        default_factory=list,
        description="Discord channels the bridge serves, threads in them included (JSON list "
        "of channel ids); others are ignored. Empty: none.",
    )
    discord_api_url: str = Field(
        default="https://discord.com/api/v10",
        description="Discord's HTTP API, where the bridge logs in (another only for a proxy "
        "or a local test server).",
    )

    slack_bot_token: SecretStr | None = Field(
        default=None,
        description="The Slack app's bot token, xoxb-… (or use AGENTDECK_SLACK_BOT_TOKEN_FILE). "
        "Never logged.",
    )
    slack_bot_token_file: Path | None = Field(
        default=None,
        description="A file holding the Slack bot token; it must be readable by its owner "
        "only (mode 0600), or the bridge refuses it.",
    )
    slack_app_token: SecretStr | None = Field(
        default=None,
        description="The Slack app-level token for Socket Mode, xapp-… with connections:write "
        "(or use AGENTDECK_SLACK_APP_TOKEN_FILE). Never logged.",
    )
    slack_app_token_file: Path | None = Field(
        default=None,
        description="A file holding the Slack app-level token; mode 0600, or the bridge "
        "refuses it.",
    )
    slack_channels: list[str] = Field(
        default_factory=list,
        description="Slack channels the bridge serves, threads in them included (JSON list "
        "of channel ids, e.g. C0123ABCD); others are ignored. Empty: none.",
    )
    slack_api_url: str = Field(
        default="https://slack.com/api/",
        description="Slack's Web API, which the bridge posts through and asks for its Socket "
        "Mode address (another for GovSlack, a proxy or a local test server).",
    )
