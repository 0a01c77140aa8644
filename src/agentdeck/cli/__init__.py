"""The ``agentdeck`` command line.

``main`` answers the steering commands on the quick path when it can (``quick``:
no Typer, no settings object, no HTTP library; a daemon answers them) and hands
everything else to the Typer app (``app``). Both print the same output and take
the same arguments: the quick path's argument table is generated from the app.
"""

from __future__ import annotations

import gc
import sys

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from types import TracebackType


def main() -> None:
    if sys.argv[1:] == ["--help"]:  # before anything else: nothing to parse or ask
        from agentdeck.cli.quick_spec import HELP

        sys.stdout.write(HELP)
        sys.exit(0)
    from agentdeck.cli.quick import run_quick

    code = run_quick(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    with importing():
        from agentdeck.cli.app import main as run_app

    run_app()


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
