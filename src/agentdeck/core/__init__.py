"""The domain: agents, their states and the events they produce. Pure: no I/O."""
