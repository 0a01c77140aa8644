"""The sandbox: a profile's ``sandbox`` block turned into OS confinement of an
agent's Claude Code process (bubblewrap, an allow-list proxy, a relay inside),
or into Claude Code's own Bash sandbox. See ``docs/architecture.md``."""
