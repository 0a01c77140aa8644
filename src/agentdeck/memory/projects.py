"""How a project is named: one function, light enough for the CLI to import."""

from __future__ import annotations

from pathlib import Path

__all__ = ["project_of"]


def project_of(path: str | None) -> str:
    """The project a session belongs to: its directory, absolute, symlinks resolved
    (Claude Code reports the real directory, the runner resolves its workspaces).
    Every surface — hooks, runner, CLI, API, MCP — names projects through this."""
    if not path:
        return ""
    try:
        expanded = Path(path).expanduser()
    except (RuntimeError, ValueError):  # no such ``~user`` (a NUL in it, even): as written
        expanded = Path(path)
    try:
        return str(expanded.resolve())
    except (OSError, RuntimeError, ValueError):  # a loop, a NUL: as absolute as we can
        return str(expanded.absolute())
