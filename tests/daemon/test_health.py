"""The deck looks after itself: ``/healthz`` and ``/readyz`` over real HTTP (what a
caller without a token learns, and with one), the event loop's lag under a stall
injected into the very loop that serves them, the store's write probe failing, and
systemd's notify protocol spoken by a real daemon subprocess to a real datagram
socket — its watchdog pings stop while the daemon is stopped (SIGSTOP)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentdeck import __version__
from agentdeck.core.health import (
    HealthStatus,
    LoopLag,
    Readiness,
    judge_disk,
    judge_lag,
    lag_of,
)
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.health import LoopMonitor
from agentdeck.daemon.watchdog import Watchdog, send
from agentdeck.settings import Settings
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_env
from tests.support.fulldisk import fill, small_disk
from tests.support.waiting import eventually
from tests.web.conftest import RunningDaemon, running_daemon
from tests.web.dashboard_support import CHROMIUM, browser_tab, snap

pytestmark = pytest.mark.anyio

FAST = 0.05  # the monitor's interval in the in-process tests
# The in-process monitors' window: 80 wake-ups, so one stall is their p99 while it is in
# the window (4 s: the probe or the page that reads it comes well within).
WINDOW = 4.0


# --- the pure rules ---------------------------------------------------------------------


def test_lag_summary_and_judgement() -> None:
    assert lag_of([]) == LoopLag(0, 0.0, 0.0, 0.0)
    lag = lag_of([0.001] * 99 + [0.5])
    assert (lag.samples, lag.last, lag.max) == (100, 0.5, 0.5)
    assert lag.p99 == 0.001  # one stall in a hundred wake-ups is not the p99
    assert judge_lag(lag).status is HealthStatus.OK
    assert judge_lag(lag_of([0.001] * 99 + [3.0])).status is HealthStatus.DEGRADED  # a freeze
    # Just after start-up the window is not full: the wake-ups to come count as on time.
    assert lag_of([0.34, 0.001], expected=120).p99 == 0.001
    assert lag_of([0.34, 0.001], expected=2).p99 == 0.34
    assert judge_lag(lag_of([0.3] * 10)).status is HealthStatus.DEGRADED
    assert judge_lag(lag_of([2.5] * 10)).status is HealthStatus.UNHEALTHY
    assert judge_lag(None).status is HealthStatus.OK
    assert judge_disk(10 * 1024**3, "/h").status is HealthStatus.OK
    assert judge_disk(1024**3, "/h").status is HealthStatus.DEGRADED
    assert judge_disk(1024**2, "/h").status is HealthStatus.UNHEALTHY


def test_readiness_is_its_worst_check_and_survives_the_wire() -> None:
    checks = [judge_disk(1024**3, "/h"), judge_lag(lag_of([0.01])), judge_lag(lag_of([2.5]))]
    ready = Readiness.of(checks, lag_of([2.5]))
    assert ready.status is HealthStatus.UNHEALTHY
    assert ready.reasons == [f"disk: {checks[0].detail}", f"loop: {checks[2].detail}"]
    assert Readiness.from_dict(ready.to_dict()) == ready


# --- the loop monitor, on a real loop --------------------------------------------------


async def test_the_monitor_sees_a_stall_of_its_own_loop() -> None:
    monitor = LoopMonitor(interval=FAST)
    seen: list[float] = []
    monitor.on_tick(seen.append)
    monitor.start()
    try:
        await _ticks(seen, 3)
        _block_the_loop(0.4)
        await _ticks(seen, len(seen) + 2)
        assert monitor.lag().max >= 0.35
        assert monitor.lag().samples == len(seen)
    finally:
        await monitor.stop()


def test_a_loop_stuck_right_now_counts_from_its_last_wake_up() -> None:
    now = [100.0]
    monitor = LoopMonitor(interval=0.5, clock=lambda: now[0])
    monitor.record(0.001)
    now[0] += 10.5  # asked from another thread while the loop is stuck for 10 s
    assert monitor.lag().max == pytest.approx(10.0)
    now[0] += 61  # a minute later nothing of the old samples is left but the stall
    assert monitor.lag().samples == 1


async def _ticks(seen: list[float], n: int) -> None:
    async with asyncio.timeout(20):
        while len(seen) < n:  # noqa: ASYNC110 - the monitor's ticks, under a deadline
            await asyncio.sleep(FAST / 2)


# --- the probes over HTTP --------------------------------------------------------------


@contextlib.asynccontextmanager
async def _serving(settings: Settings, monitor: LoopMonitor) -> AsyncIterator[RunningDaemon]:
    async with running_daemon(settings, configure=lambda deck: deck.watch_loop(monitor)) as d:
        monitor.start()
        try:
            yield d
        finally:
            await monitor.stop()


@pytest.fixture
async def served(settings: Settings) -> AsyncIterator[RunningDaemon]:
    async with _serving(settings, LoopMonitor(interval=FAST, window=WINDOW)) as d:
        yield d


def _block_the_loop(seconds: float) -> None:
    """The fault injected: the calling thread — the event loop's — blocked for
    ``seconds``, as a blocking call in a handler would block it (an event nobody sets)."""
    threading.Event().wait(seconds)


async def _recorded(served: RunningDaemon, status: HealthStatus) -> None:
    """Until the monitor has woken (late) after a stall and says ``status``."""

    async def seen() -> bool:
        return served.deck.loop_check().status is status

    await eventually(seen, timeout=20, what=f"the monitor to record the stall ({status})")


async def _calm(served: RunningDaemon) -> None:
    """Until the fixture's own start (on this loop) is out of the monitor's window."""

    async def calm() -> bool:
        return served.deck.loop_check().status is HealthStatus.OK

    await eventually(calm, timeout=60, what="a calm loop")


async def test_healthz_says_ok_to_anyone_and_the_version_to_a_token(
    served: RunningDaemon,
) -> None:
    async with served.client(token="") as anyone:
        r = await anyone.get("/healthz")
        assert (r.status_code, r.json()) == (200, {"status": "ok"})
        assert (await anyone.head("/healthz")).status_code == 200
        assert (await anyone.post("/healthz")).status_code == 405
        foreign = await anyone.get("/healthz", headers={"Host": "evil.example"})
        assert foreign.status_code == 421
    async with served.client() as api:
        r = await api.get("/healthz")
        assert r.json() == {"status": "ok", "version": __version__}
    async with served.client(token="not-a-token") as wrong:
        assert (await wrong.get("/healthz")).status_code == 401
        assert (await wrong.get("/readyz")).status_code == 401


async def test_readyz_gives_reasons_only_to_a_token(served: RunningDaemon) -> None:
    # Ok once the loop is calm (a loaded machine's hiccup is in a 4 s window for 4 s).
    async with served.client(token="") as anyone:

        async def bare() -> httpx.Response | None:
            r = await anyone.get("/readyz")
            return r if r.json() == {"status": "ok"} else None

        assert (await eventually(bare, timeout=60, what="ok")).status_code == 200
    async with served.client() as api:

        async def full() -> dict[str, Any] | None:
            body: dict[str, Any] = (await api.get("/readyz")).json()
            return body if body["status"] == "ok" else None

        body = await eventually(full, timeout=60, what="ok, with reasons")
    assert body["reasons"] == []
    assert [c["name"] for c in body["checks"]] == ["store", "runner", "loop", "disk"]
    assert body["lag"]["samples"] >= 0
    store = body["checks"][0]["detail"]
    assert "written in" in store and str(served.settings.home_dir) in body["checks"][3]["detail"]


@pytest.mark.parametrize(
    ("stall", "status", "code"), [(0.6, "degraded", 200), (2.3, "unhealthy", 503)]
)
async def test_readyz_under_a_stall_of_the_serving_loop(
    served: RunningDaemon, stall: float, status: str, code: int
) -> None:
    await _calm(served)
    async with served.client() as api, served.client(token="") as anyone:
        _block_the_loop(stall)  # the loop serving the probes
        await _recorded(served, HealthStatus(status))
        r = await api.get("/readyz")
        assert (r.status_code, r.json()["status"]) == (code, status), r.json()
        assert any(reason.startswith("loop: lag p99") for reason in r.json()["reasons"])
        bare = await anyone.get("/readyz")
        assert (bare.status_code, bare.json()) == (code, {"status": status})
        assert (await anyone.get("/healthz")).status_code == 200  # alive all the same


async def test_a_full_disk_makes_the_store_unhealthy_until_there_is_room(
    tmp_path: Path, settings: Settings
) -> None:
    def status(ready: Readiness, name: str) -> HealthStatus:
        return next(c.status for c in ready.checks if c.name == name)

    with small_disk(tmp_path / "disk", "8m") as disk:
        on_disk = settings.model_copy(update={"home": disk / "home"})
        deck = await open_deck(on_disk, embedded=True)
        try:
            first = await deck.readiness()
            assert status(first, "store") is HealthStatus.OK, first.reasons
            assert status(first, "disk") is HealthStatus.UNHEALTHY  # 8 MB is under 200 MB
            filler = fill(disk)  # the fault: no room left under the home
            deck._store_seen = None  # past the probe's few seconds of memory
            full = await deck.readiness()
            assert status(full, "store") is HealthStatus.UNHEALTHY, full.reasons
            assert "takes no write" in full.reasons[0]
            filler.unlink()
            deck._store_seen = None
            again = await deck.readiness()
            assert status(again, "store") is HealthStatus.OK, again.reasons
        finally:
            await deck.close()


# --- systemd's notify protocol, spoken by a real daemon ---------------------------------


def test_watchdog_from_environ() -> None:
    pid = str(os.getpid())
    assert Watchdog.from_environ({}) is None
    assert Watchdog.from_environ({"NOTIFY_SOCKET": "relative/path"}) is None
    plain = Watchdog.from_environ({"NOTIFY_SOCKET": "/run/x"})
    assert plain is not None and plain.every is None
    fed = Watchdog.from_environ(
        {"NOTIFY_SOCKET": "@x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": pid}
    )
    assert fed is not None and fed.every == 15.0
    other = Watchdog.from_environ(
        {"NOTIFY_SOCKET": "@x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}
    )
    assert other is not None and other.every is None  # the watchdog is another process's


def test_an_abstract_socket_gets_the_datagram() -> None:
    name = f"agentdeck-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        assert send("@" + name, "WATCHDOG=1")
        assert sock.recv(4096) == b"WATCHDOG=1"
    assert not send("/nonexistent/notify.sock", "READY=1")  # logged, not raised


def test_a_reader_that_lags_never_blocks_the_sender() -> None:
    """A datagram socket queues 10 (net.unix.max_dgram_qlen); a blocking sendto past
    that waits for the reader, and the daemon's loop with it (it hung a stop)."""
    import threading

    name = f"agentdeck-lag-{os.getpid()}"
    sent: list[bool] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)  # never read until the sender is done
        sender = threading.Thread(
            target=lambda: sent.extend(send("@" + name, "WATCHDOG=1") for _ in range(600)),
            daemon=True,
        )
        sender.start()
        sender.join(timeout=30)
        assert not sender.is_alive(), "send blocked on a full socket"
    assert sent[0] and not sent[-1]  # the first queued, the last dropped


@pytest.fixture
def notify_socket() -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket as systemd binds it (a short path: sun_path has 108 bytes)."""
    where = Path(tempfile.mkdtemp(prefix="adn-", dir="/tmp"))
    path = str(where / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    try:
        yield sock, path
    finally:
        sock.close()
        Path(path).unlink(missing_ok=True)
        where.rmdir()


def _messages(sock: socket.socket, within: float) -> list[str]:
    """Every datagram that arrives within ``within`` seconds."""
    got: list[str] = []
    deadline = time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            got.append(sock.recv(4096).decode())
        except TimeoutError:
            break
    return got


def _wait_for(sock: socket.socket, prefix: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            message = sock.recv(4096).decode()
        except TimeoutError:
            break
        if message.startswith(prefix):
            return message
    raise AssertionError(f"no {prefix!r} within {timeout} s")


async def test_a_real_daemon_notifies_systemd_and_a_stopped_one_feeds_no_watchdog(
    tmp_path: Path, notify_socket: tuple[socket.socket, str]
) -> None:
    sock, path = notify_socket
    # WatchdogSec=1s: a ping due every 0.5 s, at every wake-up of the loop monitor.
    env = deck_env(tmp_path, NOTIFY_SOCKET=path, WATCHDOG_USEC="1000000")
    daemon = await Daemon(env).start()
    try:
        assert daemon.proc is not None
        ready = _wait_for(sock, "READY=1")
        assert f"MAINPID={daemon.proc.pid}" in ready.split("\n")
        _wait_for(sock, "WATCHDOG=1")
        _wait_for(sock, "WATCHDOG=1")

        healthy = await asyncio.to_thread(deck, env, "status")
        assert "health: ok (event loop lag p99 " in healthy.out, healthy.out

        daemon.proc.send_signal(signal.SIGSTOP)  # a hung daemon: its loop turns no more
        _messages(sock, 0.3)  # a ping sent just before the stop
        assert _messages(sock, 3.0) == []  # 3 watchdog periods: systemd would restart it

        daemon.proc.send_signal(signal.SIGCONT)
        _wait_for(sock, "WATCHDOG=1", timeout=30)  # fed again once it turns on time

        # The freeze is in the last minute's lag: status and doctor say so.
        status = await asyncio.to_thread(deck, env, "status")
        assert status.code == 0, status.err
        assert "health: degraded (event loop lag p99" in status.out, status.out
        assert "\n  loop: lag p99 " in status.out, status.out
        as_json = (await asyncio.to_thread(deck, env, "status", "--json")).json()
        assert as_json["health"]["status"] == "degraded"
        assert as_json["health"]["lag"]["max"] >= 2.5  # stopped 3.3 s, less its sleep
        doctor = await asyncio.to_thread(deck, env, "doctor", "--json")
        (check,) = [c for c in doctor.json()["checks"] if c["name"] == "daemon"]
        assert check["status"] == "warn" and "is degraded: loop: lag p99" in check["detail"]
        _messages(sock, 0.2)  # read what queued meanwhile, as systemd reads at once
        daemon.proc.terminate()
        _, err = daemon.proc.communicate(timeout=60)
        after = _messages(sock, 1.0)
        assert any(m.startswith("STOPPING=1") for m in after), (daemon.proc.returncode, err)
    finally:
        daemon.stop()


# --- the board's top bar, in a real browser ----------------------------------------------


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")
async def test_the_top_bar_says_degraded_after_a_stall_and_nothing_while_ok(
    settings: Settings,
) -> None:
    from playwright.async_api import expect

    # The browser starts on this loop too: its own stall is out of the window in seconds.
    monitor = LoopMonitor(interval=FAST, window=WINDOW)
    async with _serving(settings, monitor) as served, browser_tab(served) as tab:
        await _calm(served)
        await tab.reload()
        mark = tab.locator("#deck-health")
        await expect(mark).to_have_count(1)
        await expect(mark).to_be_hidden()  # ok: nothing to say
        await snap(tab, "health-ok.png")

        _block_the_loop(0.6)  # the loop serving the board
        await _recorded(served, HealthStatus.DEGRADED)
        await tab.reload()  # within the window: the stall is still in it
        await expect(mark).to_be_visible()
        await expect(mark).to_have_text("degraded")
        await expect(mark).to_have_class(re.compile(r"\bhealth-degraded\b"))
        title = await mark.get_attribute("title") or ""
        assert title.startswith("loop: lag p99 "), title
        await snap(tab, "health-degraded.png")


# --- a newer CLI and an older daemon ------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "body", "expected"),
    [
        (404, {"error": {"status": 404, "message": "Not Found"}}, None),  # predates /readyz
        (503, {"status": "unhealthy", "reasons": ["store: x"]}, "unhealthy"),
    ],
)
def test_the_quick_client_reads_readyz_ready_or_not(
    code: int, body: dict[str, Any], expected: str | None
) -> None:
    import http.server
    import json
    import threading

    from agentdeck.cli.remote import health_line
    from agentdeck.client.quick import Daemon as QuickDaemon
    from agentdeck.daemon.home import DaemonInfo

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        info = DaemonInfo(pid=1, host="127.0.0.1", port=server.server_address[1], started_at=0)
        health = QuickDaemon(info, "t").readiness()
    finally:
        server.shutdown()
        server.server_close()
    if expected is None:
        assert health is None
        assert "predates /readyz" in health_line(health)
    else:
        assert health["status"] == expected
        assert health_line(health) == "health: unhealthy\n  store: x"
