"""Webhook triggers in the database (``store.triggers``), on both backends: kept
and listed by name, a taken name refused; a delivery id admitted once within a
day (older ones forgotten), the accepted deliveries of a minute counted against
the rate; a removed trigger takes its history along; the secret file read only
when it is a private regular file of this user."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agentdeck.core.triggers import REPLAY_WINDOW_SECONDS, Trigger, fingerprint
from agentdeck.errors import ConfigError, NotFound, Refused
from agentdeck.store import Store
from agentdeck.store.triggers import RateLimited, Replayed, TriggerStore, read_secret
from tests.store.conftest import db_rows

pytestmark = pytest.mark.anyio


def trigger(name: str, *, rate: int = 3) -> Trigger:
    return Trigger(
        name=name,
        template="reviewer",
        project="/srv/project",
        prompt_template="Review {{ payload.number }}",
        secret_file="/srv/hook.secret",
        secret_fingerprint=fingerprint(b"0123456789abcdef"),
        rate_per_min=rate,
        created_at=time.time(),
        created_by="admin",
        scenario="chat",
    )


async def test_triggers_are_kept_listed_and_removed_with_their_history(store: Store) -> None:
    ts = TriggerStore(store)
    await ts.add(trigger("b"))
    await ts.add(trigger("a"))
    with pytest.raises(Refused, match="exists"):
        await ts.add(trigger("a"))
    assert [t.name for t in await ts.all()] == ["a", "b"]
    assert (await ts.get("a")).to_dict().keys() == trigger("a").to_dict().keys()
    assert (await ts.get("b")).scenario == "chat"
    await ts.admit(await ts.get("a"), "d1", "push")
    await ts.settle("a", "d1", status=202, outcome="started", agent_id="ag1", payload="{}")
    [kept] = await ts.deliveries("a")
    assert (kept.status, kept.agent_id, kept.event) == (202, "ag1", "push")
    await ts.remove("a")
    with pytest.raises(NotFound):
        await ts.get("a")
    with pytest.raises(NotFound):
        await ts.remove("a")
    assert db_rows(store, "SELECT count(*) FROM trigger_deliveries") == [(0,)]


async def test_a_delivery_id_is_admitted_once_and_the_rate_counts_a_minute(store: Store) -> None:
    ts = TriggerStore(store)
    t = await ts.add(trigger("t", rate=2))
    other = await ts.add(trigger("u", rate=2))
    await ts.admit(t, "d1", "push")
    with pytest.raises(Replayed):
        await ts.admit(t, "d1", "push")
    await ts.admit(other, "d1", "push")  # ids are per trigger
    await ts.settle("t", "d1", status=422, outcome="template failed")  # not counted
    await ts.admit(t, "d2", "push")
    await ts.admit(t, "d3", "push")
    with pytest.raises(RateLimited) as caught:
        await ts.admit(t, "d4", "push")
    assert caught.value.http_status == 429
    # a refused delivery leaves no row: it is no replay later
    assert [d.delivery_id for d in await ts.deliveries("t")] == ["d3", "d2", "d1"]


async def test_delivery_ids_older_than_a_day_are_forgotten(store: Store) -> None:
    ts = TriggerStore(store)
    t = await ts.add(trigger("t"))
    await ts.admit(t, "old", "push")
    past = time.time() - REPLAY_WINDOW_SECONDS - 60
    db_rows(store, "UPDATE trigger_deliveries SET received_at = ?", (past,))
    await ts.admit(t, "new", "push")
    assert [d.delivery_id for d in await ts.deliveries("t")] == ["new"]


def test_the_secret_file_must_be_private(tmp_path: Path) -> None:
    path = tmp_path / "s"
    path.write_bytes(b"0123456789abcdef-x\n")
    path.chmod(0o600)
    assert read_secret(path) == b"0123456789abcdef-x"
    path.chmod(0o640)
    with pytest.raises(ConfigError, match="readable by others"):
        read_secret(path)
    path.chmod(0o600)
    link = tmp_path / "link"
    link.symlink_to(path)
    with pytest.raises(ConfigError):
        read_secret(link)
    with pytest.raises(ConfigError):
        read_secret(tmp_path)
    with pytest.raises(ConfigError):
        read_secret(tmp_path / "missing")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(ConfigError, match="not a regular file"):
        read_secret(fifo)
    path.write_bytes(b"short")
    with pytest.raises(ConfigError, match="16 bytes"):
        read_secret(path)
