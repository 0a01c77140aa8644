"""How a project is named: one function, light enough for the CLI to import."""

from __future__ import annotations

from pathlib import Path

from agentdeck.core.worktree import OWN_COMMON

__all__ = ["directory_of", "project_of"]


def project_of(path: str | None) -> str:
    """The project a session belongs to: its directory (``directory_of``), and in a
    linked git worktree the same place in the repository's main worktree (what one
    worktree learned is the repository's). Every surface — hooks, runner, CLI, API,
    MCP — names projects through this."""
    directory = directory_of(path)
    return str(_in_main_worktree(Path(directory))) if directory else ""


def directory_of(path: str | None) -> str:
    """Where a session runs: its directory, absolute, symlinks resolved (Claude Code
    reports the real directory, the runner resolves its workspaces)."""
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


def _in_main_worktree(path: Path) -> Path:
    """``path`` moved from a linked worktree to the repository's main worktree (the
    parent of git's common directory, as ``git rev-parse --git-common-dir`` finds
    it), or as it is: outside git, in a main worktree, a submodule, a bare
    repository's worktree, or where the files cannot be read."""
    try:
        for root in (path, *path.parents):
            dot_git = root / ".git"
            if dot_git.is_dir():
                return path
            if dot_git.is_file():
                main = _main_worktree(root, dot_git)
                return path if main is None else main / path.relative_to(root)
    except (OSError, ValueError):
        return path
    return path


def _main_worktree(root: Path, dot_git: Path) -> Path | None:
    text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    admin = (root / text.removeprefix("gitdir:").strip()).resolve()
    commondir = admin / "commondir"
    if not commondir.is_file():  # a submodule's .git file: its own repository
        return None
    common = (admin / commondir.read_text(encoding="utf-8").strip()).resolve()
    if common == (admin / OWN_COMMON).resolve():  # agentdeck's: <common>/worktrees/<name>
        common = admin.parent.parent
    if common.name != ".git":  # bare, or a separate git directory: no main worktree here
        return None
    return common.parent
