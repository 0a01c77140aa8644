"""Chat bridges: a conversation (a channel, or a thread in it) ↔ an agent.

``core`` is platform-neutral and acts only through the daemon's API; each
platform (``discord``) implements the small ``platform.Platform`` seam.
"""
