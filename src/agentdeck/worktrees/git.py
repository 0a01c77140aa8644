"""``git`` as a subprocess: never prompts, C locale, stderr kept for the error."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from agentdeck.errors import WorktreeError

_ENV = {
    **os.environ,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",  # status and diff never take the index lock from the agent
    "LC_ALL": "C",
}
# What agentdeck's own commits are made with, whatever the user configured.
AS_AGENTDECK = (
    "-c", "user.name=agentdeck", "-c", "user.email=agentdeck@localhost",
    "-c", "commit.gpgsign=false",
)  # fmt: skip


class GitFailed(WorktreeError):
    def __init__(self, args: tuple[str, ...], code: int, stderr: str) -> None:
        line = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {code}"
        super().__init__(f"git {' '.join(args[:2])} failed: {line}")
        self.code = code
        self.stderr = stderr


async def git(*args: str, cwd: Path | str, ok: tuple[int, ...] = (0,)) -> str:
    """Run ``git ARGS`` in ``cwd``; its stdout. An exit status not in ``ok`` raises."""
    if shutil.which("git") is None:
        raise WorktreeError("git is not installed", hint="install git to give agents worktrees")
    proc = await asyncio.create_subprocess_exec(
        "git", *args,
        cwd=str(cwd), env=_ENV,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    if proc.returncode not in ok:
        raise GitFailed(args, proc.returncode or 0, err.decode("utf-8", "replace"))
    return out.decode("utf-8", "replace")
