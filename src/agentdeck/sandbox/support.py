"""What this machine can confine: checked once per process, said in one line.

``process`` mode needs bubblewrap and the namespaces it creates (user, mount,
pid, network); ``bash`` mode is Claude Code's own sandbox, which on Linux needs
bubblewrap and socat. Each check runs the real thing (a tiny bubblewrap run),
so a kernel that forbids namespaces is found here, not in the middle of a turn.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass

from agentdeck.core.sandbox import SandboxMode

PROBE_TIMEOUT = 15.0
INSTALL_BWRAP = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
INSTALL_SOCAT = "install socat (Debian/Ubuntu: apt-get install socat)"


@dataclass(frozen=True)
class Support:
    mode: SandboxMode
    ok: bool
    detail: str  # what works, or what is missing and how to get it


@functools.cache
def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@functools.cache
def _probe_bwrap() -> tuple[bool, str]:
    path = bwrap_path()
    if path is None:
        return False, f"bubblewrap (bwrap) is not installed: {INSTALL_BWRAP}"
    argv = [
        path,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--unshare-all",
        "--die-with-parent",
        "--", "/bin/true",
    ]  # fmt: skip
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bubblewrap at {path} could not run: {exc}"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        hint = ""
        if "namespace" in why.lower() or "permission" in why.lower():
            hint = (
                "; user namespaces look disabled (sysctl kernel.unprivileged_userns_clone=1, "
                "or run the daemon with the rights to create namespaces)"
            )
        return False, f"bubblewrap cannot create a sandbox here: {why}{hint}"
    return True, f"bubblewrap {path}: user, mount, pid and network namespaces work"


def support(mode: SandboxMode) -> Support:
    """Whether this machine can run ``mode``, in one line."""
    if mode is SandboxMode.OFF:
        return Support(mode, True, "no sandbox")
    ok, detail = _probe_bwrap()
    if not ok or mode is SandboxMode.PROCESS:
        return Support(mode, ok, detail)
    if shutil.which("socat") is None:
        return Support(mode, False, f"Claude Code's Bash sandbox needs socat: {INSTALL_SOCAT}")
    return Support(mode, True, f"{detail}; socat for Claude Code's network proxy")


def reset() -> None:
    """Forget what was found (tests that change PATH)."""
    bwrap_path.cache_clear()
    _probe_bwrap.cache_clear()
