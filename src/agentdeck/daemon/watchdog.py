"""systemd's notify protocol (``sd_notify(3)``), with the socket module alone.

Under a ``Type=notify`` unit systemd gives the daemon ``NOTIFY_SOCKET`` (a Unix
datagram socket; ``@name`` is in the abstract namespace) and, with
``WatchdogSec=``, ``WATCHDOG_USEC``. The daemon says ``READY=1`` once it listens,
``WATCHDOG=1`` at least twice per watchdog period while its event loop is healthy,
and ``STOPPING=1`` as it stops. The pings are sent from the loop monitor's
wake-ups (``daemon.health``): a loop that hangs sends none, its lag past
``LAG_UNHEALTHY_SECONDS`` sends none, and systemd restarts the daemon
(``Restart=on-failure``).

These variables are systemd's protocol, not settings: they are read here, from
the environment the daemon was started with, and nowhere else.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Mapping

from agentdeck.core.health import LAG_UNHEALTHY_SECONDS

logger = logging.getLogger(__name__)


def send(address: str, message: str) -> bool:
    """One datagram to systemd's socket; False (logged) if it cannot be sent.

    Never blocks: it is sent from the event loop, and a datagram socket whose reader
    lags (its queue holds ``net.unix.max_dgram_qlen`` datagrams, 10 by default)
    would block a plain ``sendto`` — the loop with it, for good if the reader waits
    on the daemon (seen in a test that read its socket only after stopping it)."""
    target = "\0" + address[1:] if address.startswith("@") else address
    flags = socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK
    try:
        with socket.socket(socket.AF_UNIX, flags) as sock:
            sock.sendto(message.encode(), target)
    except OSError as exc:  # BlockingIOError too: that datagram is dropped, not waited on
        logger.warning("could not notify systemd at %s: %s", address, exc)
        return False
    return True


class Watchdog:
    """What the daemon tells systemd: ready, alive (while healthy), stopping."""

    def __init__(
        self,
        address: str,
        *,
        every: float | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.address = address
        self.every = every  # seconds between pings; None: no watchdog asked for
        self._clock = clock
        self._last: float | None = None
        self.pings = 0

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Watchdog | None:
        """The watchdog systemd asked for, or None outside a notify unit."""
        address = environ.get("NOTIFY_SOCKET", "")
        if not address or not (address.startswith(("/", "@"))):
            return None
        every: float | None = None
        usec = environ.get("WATCHDOG_USEC", "")
        pid = environ.get("WATCHDOG_PID", "")
        if usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid())):
            every = int(usec) / 1e6 / 2  # twice per period, as sd_watchdog_enabled(3) advises
        return cls(address, every=every)

    def ready(self, status: str) -> None:
        send(self.address, f"READY=1\nMAINPID={os.getpid()}\nSTATUS={status}")

    def stopping(self) -> None:
        send(self.address, "STOPPING=1\nSTATUS=stopping")

    def tick(self, lag: float) -> None:
        """On each loop-monitor wake-up: a ping when one is due and the loop is healthy."""
        if self.every is None or lag >= LAG_UNHEALTHY_SECONDS:
            return
        now = self._clock()
        if self._last is not None and now - self._last < self.every:
            return
        if send(self.address, "WATCHDOG=1"):
            self._last = now
            self.pings += 1
