"""What a bridge posts to its platform is delivered, or kept until it can be.

A post the platform could not take for now (no connection, no answer, a 5xx, a
429) is one log line (what, the error's short text, when the next try comes)
and is tried again, in place, so what follows it waits behind it: the waits
double from ``first_delay`` up to ``max_delay``; a 429's ``Retry-After`` is
waited as asked. What the platform refuses for good (another 4xx: a channel
gone, a permission missing) is one log line and ``Undeliverable``: no retry
would change it. Anything else is a bug and propagates.

The platforms' errors are read by their shape, not their class: discord.py's
``HTTPException`` has ``status`` and ``response.headers``; slack_sdk's
``SlackApiError`` has ``response.status_code`` and ``response.headers``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp

from agentdeck.bridges.reconnect import doubled, in_seconds, short_error
from agentdeck.errors import AgentdeckError

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Undeliverable(AgentdeckError):
    """The platform refused a post for good (not a failure that passes)."""


@dataclass(frozen=True)
class Retry:
    """How long a bridge waits between two tries of one post."""

    max_delay: float = 60.0
    first_delay: float = 1.0

    def delay(self, failures: int) -> float:
        return doubled(self.first_delay, self.max_delay, failures)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status a platform answered, if the error carries one."""
    status = getattr(exc, "status", None)
    if not isinstance(status, int):
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def retry_after(exc: BaseException) -> float | None:
    """A 429's ``Retry-After`` in seconds (None when absent or not a number)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    try:
        found = next((v for k, v in dict(headers).items() if str(k).lower() == "retry-after"), None)
        seconds = float(found) if found is not None else None
    except (TypeError, ValueError):
        return None
    if seconds is None or not seconds >= 0 or seconds == float("inf"):
        return None
    return seconds


def passes(exc: BaseException) -> bool:
    """Whether a failure is one that passes (the platform down, busy, slow)."""
    if isinstance(exc, OSError | TimeoutError | aiohttp.ClientConnectionError):
        return True
    status = status_of(exc)
    return status is not None and (status == 429 or status >= 500)


def from_platform(exc: BaseException) -> bool:
    """Whether a failure is the platform's answer or absence (not a bug)."""
    return passes(exc) or status_of(exc) is not None


async def deliver(
    what: str,
    call: Callable[[], Awaitable[T]],
    retry: Retry,
    *,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> T:
    """``call()``'s result once the platform took it; tried again for as long as
    the failure is one that passes (the caller's queue waits behind it)."""
    failures = 0
    while True:
        try:
            result = await call()
        except AgentdeckError:
            raise
        except Exception as exc:
            if not from_platform(exc):
                raise
            if not passes(exc):
                logger.warning("%s failed for good (%s); not retried", what, short_error(exc))
                raise Undeliverable(f"{what} failed: {short_error(exc)}") from None
            failures += 1
            asked = retry_after(exc) if status_of(exc) == 429 else None
            wait = asked if asked is not None else retry.delay(failures)
            logger.warning(
                "%s failed (%s); kept, try %d in %s",
                what,
                short_error(exc),
                failures + 1,
                in_seconds(wait),
            )
            await sleep(wait)
            continue
        if failures:
            logger.info("%s delivered after %d failed tries", what, failures)
        return result
