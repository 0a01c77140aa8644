"""The daemon: one long-lived process that owns the agents of a home."""
