"""The sandbox proxy's splice closes both connections whatever stops it: a stop
(cancel) while the first one is closing does not leave the other one open."""

from __future__ import annotations

import asyncio

import pytest

from agentdeck.sandbox.proxy import splice
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


class Writer:
    """A stream writer whose close is slow to finish (``wait_closed`` waits until
    released), recording that it was closed."""

    def __init__(self) -> None:
        self.closed = False
        self.release = asyncio.Event()

    def write(self, data: bytes) -> None:
        raise AssertionError("nothing to carry: both sides are at their end")

    async def drain(self) -> None:
        return None

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        await self.release.wait()


def ended() -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_eof()
    return reader


async def test_a_stop_while_the_first_side_closes_leaves_neither_open() -> None:
    a, b = Writer(), Writer()
    task = asyncio.create_task(splice((ended(), a), (ended(), b)))  # type: ignore[arg-type]

    async def closing() -> bool:
        return a.closed

    await eventually(closing, what="the first side closing")
    task.cancel()  # the proxy stopping, mid-close
    with pytest.raises(asyncio.CancelledError):
        await task
    assert a.closed and b.closed
