"""Notifications in the daemon: config refused at start, an approval of a
scripted-model agent delivered (signed, linked) while another target hangs,
and ``agentdeck notify`` through the API."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.errors import ConfigError
from agentdeck.settings import Settings
from tests.conftest import make_settings
from tests.support.deckcli import deck, deck_env
from tests.support.governance import ask_profile_and_scenario
from tests.support.receiver import Hung, Receiver
from tests.support.served import serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

SECRET = "a-long-enough-secret"


def write_config(settings: Settings, targets: list[dict[str, Any]], mode: int = 0o600) -> Path:
    settings.ensure_home()
    path = settings.home_dir / "notify.yaml"
    path.write_text(yaml.safe_dump({"targets": targets}))
    path.chmod(mode)
    return path


@pytest.mark.parametrize(
    ("targets", "mode", "says"),
    [
        ([{"name": "x", "kind": "pager", "url": "http://127.0.0.1:9"}], 0o600, "targets.0.kind"),
        ([{"name": "x", "kind": "webhook"}], 0o600, "targets.0.url"),
        (
            [{"name": "x", "kind": "webhook", "url": "http://127.0.0.1:9", "secret": SECRET}],
            0o644,
            "chmod 600",
        ),
    ],
)
async def test_a_bad_config_stops_the_start_naming_the_field(
    tmp_path: Path, targets: list[dict[str, Any]], mode: int, says: str
) -> None:
    settings = make_settings(tmp_path)
    write_config(settings, targets, mode)
    with pytest.raises(ConfigError) as caught:
        async with serving(settings):
            pass
    assert says in str(caught.value)
    assert SECRET not in str(caught.value)
    assert not (settings.home_dir / "daemon.json").exists()


async def test_a_named_config_that_is_missing_is_refused(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, notify_config=tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="does not exist"):
        async with serving(settings):
            pass


async def test_an_approval_reaches_a_webhook_while_another_target_hangs(
    tmp_path: Path, made: list[Receiver | Hung]
) -> None:
    hung, good = Hung(), Receiver()
    made += [hung, good]
    settings = make_settings(tmp_path, notify_timeout_seconds=600.0)
    write_config(
        settings,
        [
            {"name": "hung", "kind": "webhook", "url": hung.url},
            {"name": "good", "kind": "webhook", "url": good.url, "secret": SECRET},
        ],
    )
    profile, scenario = ask_profile_and_scenario(tmp_path)
    async with serving(settings) as served, served.api() as api:
        created = await api.post(
            "/api/agents",
            json={
                "prompt": "make it",
                "scenario": scenario,
                "profile": profile,
                "name": "maker",
                "keep_alive": False,
            },  # fmt: skip
        )
        assert created.status_code == 201, created.text

        async def delivered(kind: str) -> dict[str, Any] | None:
            for r in list(good.received):
                body = json.loads(r.body)
                if body["kind"] == kind:
                    ts = r.headers["X-Agentdeck-Timestamp"]
                    mac = hmac.new(SECRET.encode(), f"{ts}.".encode() + r.body, hashlib.sha256)
                    assert r.headers["X-Agentdeck-Signature"] == "sha256=" + mac.hexdigest()
                    return dict(body)
            return None

        note = await eventually(lambda: delivered("approval_needed"), what="the approval")
        (pending,) = (await api.get("/api/approvals")).json()["approvals"]
        assert note["ref"] == pending["id"] and note["agent"]["name"] == "maker"
        assert note["link"] == f"{served.info.url}/approvals#approval-{pending['id']}"
        page = await api.get("/approvals")
        assert f'id="approval-{pending["id"]}"' in page.text  # the link's anchor exists
        # The hung target still holds its first request; the agent waits only for us.
        assert served.deck._notifier.lanes["hung"].counts.delivered == 0
        answered = await api.post(f"/api/approvals/{pending['id']}", json={"decision": "allow"})
        assert answered.status_code == 200
        done = await eventually(lambda: delivered("agent_done"), what="the agent done")
        assert done["agent"]["id"] == created.json()["id"]

        async def counted() -> tuple[Any, dict[str, Any]] | None:
            # The receiver has the body before its answer reaches the lane that
            # counts it: the count follows a moment later (a flake under load).
            listed = await api.get("/api/notify/targets")
            shown = {t["name"]: t for t in listed.json()["targets"]}
            return (listed, shown) if shown["good"]["delivered"] == 2 else None

        listed, shown = await eventually(counted, what="both deliveries counted")
        assert shown["good"]["signed"] is True
        assert SECRET not in listed.text
        missing = await api.post("/api/notify/targets/nope/test")
        assert missing.status_code == 404 and missing.json()["error"]["status"] == 404
        assert (await api.post("/api/notify/dead/dlnope/replay")).status_code == 404


async def test_the_cli_lists_tests_and_replays(tmp_path: Path, made: list[Receiver | Hung]) -> None:
    broken = Receiver(then=500)
    made.append(broken)
    settings = make_settings(tmp_path, notify_backoff_seconds=0.01, notify_attempts=2)
    env = deck_env(tmp_path)
    write_config(settings, [{"name": "ops", "kind": "ntfy", "url": broken.url}])

    def cli(*args: str) -> Any:
        return asyncio.to_thread(deck, env, "notify", *args)

    down = await cli("list")
    assert down.code == 1 and "agentdeck up" in down.err
    async with serving(settings) as served:
        listed = await cli("list", "--json")
        assert listed.code == 0, listed.err
        assert [t["name"] for t in listed.json()] == ["ops"]
        failed = await cli("test", "ops")
        assert failed.code == 1 and "HTTP 500" in failed.err
        unknown = await cli("test", "nope")
        assert unknown.code == 1 and "nope" in unknown.err
        broken.then = 200
        ok = await cli("test", "ops")
        assert ok.code == 0 and "ops: delivered" in ok.out
        assert broken.received[-1].headers["Title"] == "agentdeck test notification"

        broken.then = 500
        payload = {"kind": "agent_done", "title": "Agent done: x", "message": "done"}
        letter = await served.deck._notifier.dead.add(
            target="ops", kind="agent_done", payload=payload, reason="HTTP 500", attempts=2
        )
        dead = await cli("dead", "--json")
        assert [d["id"] for d in dead.json()] == [letter.id]
        again = await cli("replay", letter.id)
        assert again.code == 1 and "HTTP 500" in again.err
        broken.then = 200
        replayed = await cli("replay", letter.id)
        assert replayed.code == 0 and f"{letter.id}: delivered to ops" in replayed.out
        assert broken.received[-1].body == b"done"
        assert (await cli("dead", "--json")).json() == []
        assert len((await cli("dead", "--all", "--json")).json()) == 1
