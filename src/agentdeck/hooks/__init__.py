"""Claude Code hooks: the settings.json installer, the tiny hook client that
Claude Code spawns, and the daemon side that answers it."""
