"""``agentdeck tui``: the deck in a terminal (Textual), a client of the daemon's API.

``client`` speaks HTTP + SSE to the daemon (no UI); ``board`` and ``render`` are pure
(the agent table's projection, transcript lines); ``app`` and ``screens`` draw them.
"""
