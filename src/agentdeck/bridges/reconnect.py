"""A bridge's way back to its platform when the platform cannot be reached.

Each failed try is one log line (what failed, the error's short text, when the
next try comes); the wait doubles from ``FIRST_DELAY`` up to a cap; after
``attempts`` tries in a row the bridge stops with ``PlatformUnreachable``, which
the CLI says in one line (non-zero exit) and the daemon logs in one line. A
connection made starts the count anew. Both platforms' libraries would otherwise
retry for ever (Slack's, printing a traceback each time) or end the task group
with a traceback (Discord's login).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agentdeck.errors import AgentdeckError
from agentdeck.settings import Settings

logger = logging.getLogger(__name__)

FIRST_DELAY = 1.0  # seconds before the second try
ERROR_WIDTH = 200  # characters of an error's text in a log line


class PlatformUnreachable(AgentdeckError):
    """A chat platform did not answer ``attempts`` tries in a row."""

    def __init__(self, platform: str, attempts: int, seconds: float, last: str) -> None:
        super().__init__(
            f"the {platform} bridge stopped: {platform} could not be reached in {attempts} "
            f"{'try' if attempts == 1 else 'tries'} over {seconds:.0f} s (last: {last})",
            hint="check the network and the platform's status, then start the bridge again; "
            "AGENTDECK_BRIDGE_CONNECT_ATTEMPTS sets how many tries",
        )
        self.platform = platform
        self.attempts = attempts
        self.last = last


@dataclass(frozen=True)
class Backoff:
    """How often and how patiently a bridge tries to reach its platform."""

    attempts: int
    max_delay: float
    timeout: float  # of one try that does not answer
    first_delay: float = FIRST_DELAY

    @classmethod
    def from_settings(cls, settings: Settings) -> Backoff:
        return cls(
            attempts=settings.bridge_connect_attempts,
            max_delay=settings.bridge_retry_max_seconds,
            timeout=settings.bridge_connect_timeout_seconds,
        )

    def delay(self, failures: int) -> float:
        """The wait after the ``failures``-th failure in a row (1, 2, 4, … capped)."""
        return doubled(self.first_delay, self.max_delay, failures)


def doubled(first: float, cap: float, failures: int) -> float:
    """``first`` doubled for each failure in a row after the first, up to ``cap``."""
    return min(cap, first * float(2 ** min(failures - 1, 32)))


def short_error(exc: BaseException, *, timeout: float | None = None) -> str:
    """An error as a reader wants it in one line: its type and its first line."""
    if isinstance(exc, TimeoutError) and not str(exc):
        return f"no answer within {timeout:g} s" if timeout is not None else "timed out"
    text = " ".join(str(exc).split())
    if len(text) > ERROR_WIDTH:
        text = text[: ERROR_WIDTH - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def in_seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.2g} s"


class Attempts:
    """The tries in a row to reach one platform. ``failed`` logs the failure and
    waits before the next try, or raises ``PlatformUnreachable`` after the last."""

    def __init__(
        self,
        platform: str,
        backoff: Backoff,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.platform = platform
        self.backoff = backoff
        self.failures = 0
        self._since: float | None = None
        self._sleep = sleep

    def succeeded(self) -> None:
        """A connection was made: the next failure is the first of a new count."""
        self.failures = 0
        self._since = None

    async def failed(self, what: str, exc: BaseException) -> None:
        now = time.monotonic()
        if self._since is None:
            self._since = now
        self.failures += 1
        last = short_error(exc, timeout=self.backoff.timeout)
        if self.failures >= self.backoff.attempts:
            raise PlatformUnreachable(
                self.platform, self.failures, now - self._since, f"{what}: {last}"
            ) from None
        wait = self.backoff.delay(self.failures)
        logger.warning(
            "%s: %s failed (%s); try %d of %d in %s",
            self.platform,
            what,
            last,
            self.failures + 1,
            self.backoff.attempts,
            in_seconds(wait),
        )
        await self._sleep(wait)


def reason(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """What ended a task group, for one clear line: the first ``AgentdeckError`` in
    it (a bridge stopped on purpose), else the group itself (a bug: its traceback)."""
    ours = group.subgroup(lambda e: isinstance(e, AgentdeckError))
    while ours is not None:
        first = ours.exceptions[0]
        if not isinstance(first, BaseExceptionGroup):
            return first
        ours = first
    return group
