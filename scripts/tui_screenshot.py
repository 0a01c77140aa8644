"""Write ``docs/tui.svg``, the README's picture of ``agentdeck tui``: the main screen
drawn by the real app from the same fixed data as its snapshot tests
(``tests/tui/test_snapshots.py``), so it cannot drift from what the TUI draws (a
test checks it is current).

    .venv/bin/python scripts/tui_screenshot.py
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "tui.svg"
SIZE = (100, 30)


async def screenshot() -> str:
    sys.path.insert(0, str(ROOT))
    from tests.tui.test_snapshots import Nowhere, fill

    from agentdeck.tui.app import DeckApp
    from agentdeck.tui.feed import FeedState

    app = DeckApp(Nowhere())
    async with app.run_test(size=SIZE) as pilot:
        await fill(pilot)
        # As when connected: the stream's worker stopped (there is no daemon to find),
        # the top line says live.
        app.workers.cancel_group(app, "feed")
        app.feed_state, app.feed_problem = FeedState.LIVE, None
        app._show_status()
        await pilot.pause()
        return app.export_screenshot(title="agentdeck tui")


def main() -> None:
    OUT.write_text(asyncio.run(screenshot()))
    sys.stdout.write(f"wrote {OUT.relative_to(ROOT)}\n")


if __name__ == "__main__":
    main()
