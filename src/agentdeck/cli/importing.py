"""Importing the app's modules quickly: ``importing`` (a module of its own, so that
``cli.decks`` uses it without importing the ``cli`` package back)."""

from __future__ import annotations

import gc

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from types import TracebackType


class importing:
    """Imports with the cyclic garbage collector off, what they made frozen after.

    Importing the app, the SDK and the store makes some hundreds of thousands of
    objects and no garbage; the collector walking them again and again meanwhile
    is ~13 % of the import time (~0.2 s of an embedded ``agentdeck run``).
    Frozen (``gc.freeze``), later collections and the interpreter's exit skip them.
    (A class: ``contextlib`` would cost the quick path its import.)
    """

    def __enter__(self) -> None:
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        gc.freeze()
        if self.enabled:
            gc.enable()
