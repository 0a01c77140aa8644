"""Orchestration: agent templates, the agent tree, asks, and the ``deck`` MCP
tools that orchestrators and workers use (see ``docs/architecture.md``)."""
