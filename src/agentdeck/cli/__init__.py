"""The ``agentdeck`` command line.

``main`` answers the steering commands on the quick path when it can (``quick``:
no Typer, no settings object, no HTTP library; a daemon answers them) and hands
everything else to the Typer app (``app``). Both print the same output and take
the same arguments: the quick path's argument table is generated from the app.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--help"]:  # before anything else: nothing to parse or ask
        from agentdeck.cli.quick_spec import HELP

        sys.stdout.write(HELP)
        sys.exit(0)
    if sys.argv[1:] in (["--version"], ["-V"]):
        from agentdeck import __version__

        sys.stdout.write(f"agentdeck {__version__}\n")
        sys.exit(0)
    from agentdeck.cli.quick import run_quick

    code = run_quick(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from agentdeck.cli.importing import importing

    with importing():
        from agentdeck.cli.app import main as run_app

    run_app()
