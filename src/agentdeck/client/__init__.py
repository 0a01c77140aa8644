"""The one way a client talks to the daemon's API.

``sse`` reads the event stream; ``quick`` is the blocking client the CLI's quick
path uses (the interpreter's own socket, nothing heavy); ``http`` the asynchronous
one (httpx) the TUI, the bridges and the CLI's event-loop commands use; ``locate``
finds the daemon of a home. Errors cross the wire as ``agentdeck.errors`` renders
and rebuilds them (``to_wire``, ``from_wire``): the class raised in the daemon is
the class a client catches.

Nothing is imported here: the quick path loads only what it uses.
"""
