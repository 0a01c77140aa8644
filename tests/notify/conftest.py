"""Fixtures of the notification tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.receiver import Hung, Receiver


@pytest.fixture
def made() -> Iterator[list[Receiver | Hung]]:
    """The receivers a test starts, closed after it."""
    servers: list[Receiver | Hung] = []
    yield servers
    for s in servers:
        s.close()
