from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store


@pytest.fixture
async def deck(settings: Settings) -> AsyncIterator[tuple[Store, Runner]]:
    """A store and a runner on a fresh home; every agent is stopped afterwards."""
    settings.ensure_home()
    store = Store.open(settings.db_path)
    runner = Runner(store, settings)
    try:
        yield store, runner
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()
