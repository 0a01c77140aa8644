"""agentdeck: a self-hosted control plane for Claude Code agents."""

__version__ = "0.1.0"
