"""A clock the test moves: the scheduler naps until it is moved (or poked)."""

from __future__ import annotations

import asyncio


class ManualClock:
    def __init__(self, start: float) -> None:
        self.t = start
        self.pokes: list[asyncio.Event] = []

    def now(self) -> float:
        return self.t

    async def nap(self, seconds: float, poke: asyncio.Event) -> None:
        if poke not in self.pokes:
            self.pokes.append(poke)
        await poke.wait()  # only a move of the clock (or a change of schedules) wakes it

    def advance(self, seconds: float) -> None:
        self.t += seconds
        for poke in self.pokes:
            poke.set()
