"""Deliveries to real HTTP receivers: signed, retried, dead-lettered, replayed; and
the desktop through a fake ``notify-send`` on PATH (our seam)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.events import PermissionRequested, StateChanged
from agentdeck.core.notify import Target, TargetKind
from agentdeck.daemon.hub import EventHub
from agentdeck.errors import DeliveryFailed, Refused
from agentdeck.notify.service import Notifier
from agentdeck.settings import Settings
from agentdeck.store.notify import DeadLetters
from agentdeck.store.store import Store
from tests.conftest import make_settings
from tests.runner.test_scrubbing import SECRETS_TXT, leaked
from tests.support.receiver import Hung, Receiver
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio

SECRET = "a-long-enough-secret"


@pytest.fixture
def fast(tmp_path: Path) -> Settings:
    return make_settings(
        tmp_path, notify_backoff_seconds=0.01, notify_attempts=3, notify_timeout_seconds=5
    )


@pytest.fixture
async def store(fast: Settings) -> AsyncIterator[Store]:
    fast.ensure_home()
    store = Store.open(fast.db_path)
    try:
        yield store
    finally:
        await store.close()


async def running(settings: Settings, store: Store, targets: list[Target]) -> Notifier:
    hub = EventHub(store, poll_seconds=0.1)
    await hub.start()
    notifier = Notifier(settings, store, hub, targets)
    await notifier.start("http://deck.test:8765")
    return notifier


async def stopped(notifier: Notifier) -> None:
    await notifier.stop()
    await notifier.hub.stop()


def approval(agent: str = "a1", ref: str = "ap1") -> PermissionRequested:
    return PermissionRequested(
        agent_id=agent, ts=time.time(), request_id=ref, tool="Bash", input={"command": "ls"}
    )


def verified(r: Any) -> dict[str, Any]:
    """What a receiver does: check the signature with the shared secret, by hand."""
    ts = r.headers["X-Agentdeck-Timestamp"]
    mac = hmac.new(SECRET.encode(), ts.encode() + b"." + r.body, hashlib.sha256).hexdigest()
    assert r.headers["X-Agentdeck-Signature"] == f"sha256={mac}"
    assert abs(time.time() - int(ts)) < 300
    return dict(json.loads(r.body))


async def test_a_webhook_is_signed_and_retried_after_a_500(
    fast: Settings, store: Store, made: list[Receiver | Hung]
) -> None:
    receiver = Receiver(statuses=(500,))
    made.append(receiver)
    target = Target(name="ops", kind=TargetKind.WEBHOOK, url=receiver.url, secret=SECRET)
    notifier = await running(fast, store, [target])
    try:
        await store.append([approval()])
        await eventually(lambda: _async(len(receiver.received) == 2), what="a retry")
        first, second = receiver.received
        assert first.body == second.body  # the same notification, sent again
        body = verified(second)
        assert body["kind"] == "approval_needed" and body["ref"] == "ap1"
        assert body["link"] == "http://deck.test:8765/approvals#approval-ap1"
        assert second.headers["X-Agentdeck-Event"] == "approval_needed"
        assert SECRET not in second.body.decode()
        await eventually(lambda: _async(notifier.lanes["ops"].counts.delivered == 1))
        assert await DeadLetters(store).list_letters() == []
    finally:
        await stopped(notifier)


async def test_always_500_is_dead_lettered_then_replayed_to_a_fixed_receiver(
    fast: Settings, store: Store, made: list[Receiver | Hung]
) -> None:
    broken = Receiver(then=500)
    made.append(broken)
    target = Target(name="ops", kind=TargetKind.WEBHOOK, url=broken.url, secret=SECRET)
    notifier = await running(fast, store, [target])
    letters = DeadLetters(store)
    try:
        await store.append([approval(ref="ap2")])
        (letter,) = await eventually(letters.list_letters, what="a dead letter")
        assert len(broken.received) == fast.notify_attempts
        assert letter.target == "ops" and letter.reason == "HTTP 500"
        assert letter.attempts == 3 and letter.payload["ref"] == "ap2"
    finally:
        await stopped(notifier)

    # Still broken after a restart: the replay fails, and the letter stays, one attempt more.
    notifier = await running(fast, store, [target])
    try:
        with pytest.raises(DeliveryFailed, match="HTTP 500"):
            await notifier.replay(letter.id[:6])
        assert (await letters.get(letter.id)).attempts == 4
    finally:
        await stopped(notifier)

    fixed = Receiver()
    made.append(fixed)
    repaired = Target(name="ops", kind=TargetKind.WEBHOOK, url=fixed.url, secret=SECRET)
    notifier = await running(fast, store, [repaired])
    try:
        replayed = await notifier.replay(letter.id)
        assert replayed.state == "replayed" and replayed.replayed_at is not None
        (got,) = fixed.received
        assert verified(got)["ref"] == "ap2"
        assert await letters.list_letters() == []
        assert [x.id for x in await letters.list_letters(include_replayed=True)] == [letter.id]
        with pytest.raises(Refused, match="replayed already"):
            await notifier.replay(letter.id)
    finally:
        await stopped(notifier)
    gone = await running(fast, store, [])
    try:
        other = await letters.add(
            target="ops", kind="agent_done", payload={}, reason="x", attempts=1
        )
        with pytest.raises(Refused, match="no longer configured"):
            await gone.replay(other.id)
    finally:
        await stopped(gone)


async def test_a_hung_target_does_not_hold_up_another(
    fast: Settings, store: Store, made: list[Receiver | Hung]
) -> None:
    hung, good = Hung(), Receiver()
    made += [hung, good]
    slow = fast.model_copy(update={"notify_timeout_seconds": 600.0})
    notifier = await running(
        slow,
        store,
        [
            Target(name="hung", kind=TargetKind.WEBHOOK, url=hung.url),
            Target(name="good", kind=TargetKind.NTFY, url=good.url),
        ],
    )
    try:
        for n in range(3):
            await store.append([approval(ref=f"ap{n}")])
        await eventually(lambda: _async(len(good.received) == 3), what="three deliveries")
        ntfy = good.received[0]
        assert ntfy.headers["Title"] == "Approval needed: a1"
        assert ntfy.headers["Click"] == "http://deck.test:8765/approvals#approval-ap0"
        assert ntfy.body == b"Bash: ls"
        assert notifier.lanes["hung"].counts.delivered == 0
    finally:
        await stopped(notifier)


async def test_a_full_queue_dead_letters_at_once(
    fast: Settings, store: Store, made: list[Receiver | Hung]
) -> None:
    hung = Hung()
    made.append(hung)
    small = fast.model_copy(update={"notify_timeout_seconds": 600.0, "notify_queue_size": 1})
    notifier = await running(
        small, store, [Target(name="hung", kind=TargetKind.WEBHOOK, url=hung.url)]
    )
    try:
        # One in flight, one queued; the rest find the queue full.
        await store.append([approval(ref=f"ap{n}") for n in range(4)])
        letters = await eventually(
            lambda: _async_list(DeadLetters(store).list_letters()), what="dead letters"
        )
        assert {x.reason for x in letters} == {"queue full: the target is too slow"}
        assert all(x.attempts == 0 for x in letters)
    finally:
        await stopped(notifier)


async def test_filters_pick_the_target(
    fast: Settings, store: Store, made: list[Receiver | Hung]
) -> None:
    done_only, everything = Receiver(), Receiver()
    made += [done_only, everything]
    notifier = await running(
        fast,
        store,
        [
            Target(name="done", kind=TargetKind.WEBHOOK, url=done_only.url,
                   events=frozenset({"agent_done"})),
            Target(name="all", kind=TargetKind.WEBHOOK, url=everything.url),
            Target(name="other", kind=TargetKind.WEBHOOK, url=everything.url, agents=("zz*",)),
        ],
    )  # fmt: skip
    try:
        await store.append(
            [approval(), StateChanged(agent_id="a1", ts=time.time(), old="running", new="done")]
        )
        await eventually(lambda: _async(len(everything.received) == 2), what="both kinds")
        await eventually(lambda: _async(len(done_only.received) == 1), what="the done one")
        assert json.loads(done_only.received[0].body)["kind"] == "agent_done"
        assert notifier.lanes["other"].counts.delivered == 0
    finally:
        await stopped(notifier)


def fake_notify_send(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int = 0, stderr: str = ""
) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "argv.jsonl"
    exe = bindir / "notify-send"
    exe.write_text(
        "#!/usr/bin/env python3\nimport json, sys\n"
        f"open({str(record)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"sys.stderr.write({stderr!r})\n"
        f"sys.exit({code})\n"
    )
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return record


async def test_the_desktop_gets_notify_send(
    fast: Settings, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = fake_notify_send(tmp_path, monkeypatch)
    notifier = await running(fast, store, [Target(name="desk", kind=TargetKind.DESKTOP)])
    try:
        await store.append([approval(ref="ap5")])
        await eventually(lambda: _async(record.exists() and record.read_text()), what="argv")
        argv = json.loads(record.read_text().splitlines()[0])
        assert argv[:3] == ["--app-name=agentdeck", "--urgency=critical", "--"]
        assert argv[3] == "Approval needed: a1"
        assert argv[4] == "Bash: ls\nhttp://deck.test:8765/approvals#approval-ap5"
        await notifier.test("desk")
        assert json.loads(record.read_text().splitlines()[1])[3] == "agentdeck test notification"
    finally:
        await stopped(notifier)


async def test_a_failing_notify_send_says_why(
    fast: Settings, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_notify_send(tmp_path, monkeypatch, code=3)
    notifier = await running(fast, store, [Target(name="desk", kind=TargetKind.DESKTOP)])
    try:
        with pytest.raises(DeliveryFailed, match="notify-send exited 3"):
            await notifier.test("desk")
    finally:
        await stopped(notifier)


async def _async(value: Any) -> Any:
    return value


async def _async_list(letters: Any) -> Any:
    found = await letters
    return found if len(found) >= 2 else None


async def test_a_refused_connection_is_reported_without_the_urls_path(
    fast: Settings, store: Store
) -> None:
    closed = Hung()
    url = closed.url.replace("/hook", "/T000/token-in-the-path")
    closed.close()  # nothing listens there now
    notifier = await running(fast, store, [Target(name="gone", kind=TargetKind.WEBHOOK, url=url)])
    try:
        with pytest.raises(DeliveryFailed) as caught:
            await notifier.test("gone")
        assert "ConnectError" in caught.value.reason
        assert "token-in-the-path" not in str(caught.value)
        assert "token-in-the-path" not in json.dumps(notifier.describe())
    finally:
        await stopped(notifier)


async def test_a_dead_letter_keeps_no_secret_of_what_failed_or_what_it_carried(
    fast: Settings, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notify-send that fails saying secrets (its stderr is the reason), for an
    approval whose call carries the corpus: the dead letter's row, read raw, and
    the letters as listed hold none of them."""
    said = "DB_PASSWORD=dKVj2h+%iegYuH and GITHUB_TOKEN=ghp_G5HlLB43jU38rDiU2I2MJeWeZsKYzX7sMjqd"
    fake_notify_send(tmp_path, monkeypatch, code=3, stderr=said)
    notifier = await running(fast, store, [Target(name="desk", kind=TargetKind.DESKTOP)])
    try:
        asked = PermissionRequested(
            agent_id="a1",
            ts=time.time(),
            request_id="ap9",
            tool="Bash",
            input={"command": SECRETS_TXT},
        )
        await store.append([asked])
        letters = await eventually(DeadLetters(store).list_letters, what="a dead letter")
    finally:
        await stopped(notifier)
    (letter,) = letters
    assert letter.reason.startswith("notify-send exited 3: DB_PASSWORD=[REDACTED:"), letter.reason
    assert "[REDACTED:" in json.dumps(letter.payload)
    with sqlite3.connect(f"file:{fast.db_path}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT * FROM notify_dead").fetchall()
    assert leaked(json.dumps(rows)) == [] and leaked(json.dumps(letter.to_dict())) == []
