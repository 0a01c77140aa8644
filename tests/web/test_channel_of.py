"""Who an answer came from: the client's channel, and a bridge's chat member."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from agentdeck.web.auth import channel_of


@dataclass
class Request:
    headers: dict[str, str] = field(default_factory=dict)


@pytest.mark.parametrize(
    ("headers", "by"),
    [
        ({}, "user:api"),
        ({"x-agentdeck-client": "CLI"}, "user:cli"),
        ({"x-agentdeck-client": "browser"}, "user:api"),
        ({"x-agentdeck-client": "bridge"}, "user:bridge"),
        (
            {"x-agentdeck-client": "bridge", "x-agentdeck-actor": "discord:42:alice"},
            "user:bridge:discord:42:alice",
        ),
        # Only a bridge names a member; anything odd is just the channel.
        ({"x-agentdeck-client": "cli", "x-agentdeck-actor": "discord:42:alice"}, "user:cli"),
        ({"x-agentdeck-client": "bridge", "x-agentdeck-actor": "a\nb"}, "user:bridge"),
        ({"x-agentdeck-client": "bridge", "x-agentdeck-actor": "x" * 201}, "user:bridge"),
    ],
)
def test_channel_of(headers: dict[str, str], by: str) -> None:
    assert channel_of(Request(headers)) == by
