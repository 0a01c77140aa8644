"""A stopping daemon stops its scheduler before it refuses new agents: a run that
comes due meanwhile stays due (the catch-up rule decides at the next start) instead
of being recorded as failed (ShuttingDown)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.daemon.compose import open_deck
from tests.conftest import make_settings
from tests.schedules.clock import ManualClock
from tests.schedules.test_scheduler import T0

pytestmark = pytest.mark.anyio


async def test_refusing_starts_stops_the_scheduler_first(tmp_path: Path) -> None:
    deck = await open_deck(make_settings(tmp_path))
    try:
        clock = ManualClock(T0)
        scheduler = deck.start_scheduling(clock)
        await deck.add_schedule(
            "nightly", "* * * * *", prompt="hello", scenario="chat", project=str(tmp_path)
        )
        due = (await deck.schedule("nightly")).schedule.next_at
        assert scheduler.serving

        await deck.refuse_starts()

        assert not scheduler.serving
        clock.advance(120)  # past its due time: nobody fires it now
        view = await deck.schedule("nightly")
        assert view.schedule.next_at == due and view.runs == ()
    finally:
        await deck.close()
