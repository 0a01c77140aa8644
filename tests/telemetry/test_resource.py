"""The resource of the daemon's spans and metrics: what the user sets wins
(``OTEL_SERVICE_NAME`` was overridden by ``service.name=agentdeck`` before), and
one ``service.instance.id`` for the daemon, whichever process sends."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.resources import Resource

from agentdeck.telemetry.resource import given_attributes, resource_attributes


def created(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, object]:
    for name in ("OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return dict(Resource.create(resource_attributes()).attributes)


def test_unset_the_service_is_agentdeck_with_the_daemons_instance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = created(monkeypatch), created(monkeypatch)
    assert first["service.name"] == "agentdeck"
    assert first["service.instance.id"] == second["service.instance.id"]


def test_the_users_service_name_and_instance_win(monkeypatch: pytest.MonkeyPatch) -> None:
    assert created(monkeypatch, OTEL_SERVICE_NAME="deck-prod")["service.name"] == "deck-prod"
    chosen = created(
        monkeypatch, OTEL_RESOURCE_ATTRIBUTES="service.name=deck%2Ca,service.instance.id=node-1"
    )
    assert (chosen["service.name"], chosen["service.instance.id"]) == ("deck,a", "node-1")


def test_malformed_attributes_are_skipped_not_fatal() -> None:
    assert given_attributes("a=1,,=,junk,b = 2 ") == {"a": "1", "": "", "b": "2"}
