"""``cli.importing``: imports with the garbage collector off, what they made frozen."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from agentdeck.cli.importing import importing


@pytest.fixture(autouse=True)
def restore_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()  # the frozen objects go back to the oldest generation
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_off_inside_and_back_on_after() -> None:
    gc.enable()
    frozen = gc.get_freeze_count()
    with importing():
        assert not gc.isenabled()
        made = [[i] for i in range(1000)]  # what an import leaves behind
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(made)


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with importing():
        pass
    assert not gc.isenabled()


def test_an_import_that_fails_still_turns_the_collector_back_on() -> None:
    gc.enable()
    with pytest.raises(ModuleNotFoundError), importing():
        import agentdeck.no_such_module  # noqa: F401
    assert gc.isenabled()
