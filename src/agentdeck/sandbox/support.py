"""What this machine can confine: checked once per process, said in one line.

``process`` mode needs bubblewrap and the namespaces it creates (user, mount,
pid, network), and must be able to take every privilege away: the probe runs
the real thing (a tiny bubblewrap run with the flags and seccomp filter an
agent gets) and reads what the process inside holds from its
``/proc/self/status``: its uid, its capabilities, its seccomp mode and
``no_new_privs``. A sandbox that leaves a capability, uid 0 or no filter is no
sandbox: ``process`` is then refused, not given in name only. ``bash`` mode is
Claude Code's own sandbox, which on Linux needs bubblewrap and socat. A kernel
that forbids namespaces is found here, not in the middle of a turn.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from agentdeck.core.sandbox import SandboxMode
from agentdeck.sandbox import seccomp

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


@dataclass(frozen=True)
class Isolation:
    """What a process inside the sandbox really holds (its ``/proc/self/status``)."""

    uid: int
    capabilities: int  # CapEff
    bounding: int  # CapBnd
    seccomp: int  # 0 none, 2 filter
    no_new_privs: bool

    @property
    def holds(self) -> bool:
        """Whether it is a sandbox: no capability, no uid 0, a filter, no new privileges."""
        return (
            self.uid != 0
            and self.capabilities == 0
            and self.bounding == 0
            and self.seccomp == 2
            and self.no_new_privs
        )

    def summary(self) -> str:
        return (
            f"uid {self.uid}, capabilities {self.capabilities:#x} (bounding "
            f"{self.bounding:#x}), seccomp {'filter' if self.seccomp == 2 else 'none'}, "
            f"no_new_privs {'on' if self.no_new_privs else 'off'}"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "uid": self.uid,
            "capabilities": f"{self.capabilities:016x}",
            "bounding": f"{self.bounding:016x}",
            "seccomp": "filter" if self.seccomp == 2 else "none",
            "no_new_privs": self.no_new_privs,
            "nested_user_namespaces": "refused",
            "holds": self.holds,
        }


def parse_status(text: str) -> Isolation:
    """An :class:`Isolation` from a ``/proc/<pid>/status``."""
    fields = dict(
        (key.strip(), value.strip())
        for key, _, value in (line.partition(":") for line in text.splitlines())
    )
    return Isolation(
        uid=int(fields.get("Uid", "0").split()[1]),
        capabilities=int(fields.get("CapEff", "f" * 16), 16),
        bounding=int(fields.get("CapBnd", "f" * 16), 16),
        seccomp=int(fields.get("Seccomp", "0")),
        no_new_privs=fields.get("NoNewPrivs", "0") == "1",
    )


def sandbox_uid() -> int | None:
    """The uid an agent has inside its sandbox when agentdeck runs as root:
    ``nobody``'s (it maps to root outside, so the files it writes are the
    user's, but it holds no capability). None otherwise: the user's own."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return 65534


def confinement_flags(uid: int | None) -> list[str]:
    """The privilege part of an agent's bubblewrap command line (plan.py's too)."""
    return [
        "--unshare-user",
        "--disable-userns",
        *(["--uid", str(uid), "--gid", str(uid)] if uid is not None else []),
        "--cap-drop", "ALL",
    ]  # fmt: skip


@functools.cache
def _probe_bwrap() -> tuple[bool, str]:
    ok, detail, _ = _probe()
    return ok, detail


@functools.cache
def isolation() -> Isolation | None:
    """What an agent's process holds here (None: no sandbox could start)."""
    return _probe()[2]


def _probe() -> tuple[bool, str, Isolation | None]:
    path = bwrap_path()
    if path is None:
        return False, f"bubblewrap (bwrap) is not installed: {INSTALL_BWRAP}", None
    try:
        program = seccomp.program(unix_sockets=False)
    except seccomp.UnsupportedArch as exc:
        return False, f"no sandbox without a seccomp filter: {exc}", None
    argv = [
        path,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        *confinement_flags(sandbox_uid()),
        "--unshare-all",
        "--die-with-parent",
        "--seccomp", "9",
        "--", "/bin/cat", "/proc/self/status",
    ]  # fmt: skip
    with tempfile.TemporaryFile() as filter_file:
        filter_file.write(program)
        filter_file.seek(0)
        fd = filter_file.fileno()
        argv[argv.index("--seccomp") + 1] = str(fd)
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT,
                check=False,
                pass_fds=(fd,),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"bubblewrap at {path} could not run: {exc}", None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        hint = ""
        if "namespace" in why.lower() or "permission" in why.lower():
            hint = (
                "; user namespaces look disabled (sysctl kernel.unprivileged_userns_clone=1, "
                "or run the daemon with the rights to create namespaces)"
            )
        return False, f"bubblewrap cannot create a sandbox here: {why}{hint}", None
    found = parse_status(done.stdout)
    if not found.holds:
        return (
            False,
            f"bubblewrap at {path} starts a process that keeps privileges ({found.summary()}): "
            "no sandbox",
            found,
        )
    return (
        True,
        f"bubblewrap {path}: user, mount, pid and network namespaces; {found.summary()}",
        found,
    )


def support(mode: SandboxMode) -> Support:
    """Whether this machine can run ``mode``, in one line."""
    if mode is SandboxMode.OFF:
        return Support(mode, True, "no sandbox")
    ok, detail = _probe_bwrap()
    if not ok or mode is SandboxMode.PROCESS:
        return Support(mode, ok, detail)
    if os.geteuid() == 0:
        return Support(
            mode,
            True,
            "as root, Claude Code's own Bash sandbox would keep root's capabilities: "
            "agents of a bash-mode profile run in the process sandbox instead",
        )
    if shutil.which("socat") is None:
        return Support(mode, False, f"Claude Code's Bash sandbox needs socat: {INSTALL_SOCAT}")
    return Support(mode, True, f"{detail}; socat for Claude Code's network proxy")


def reset() -> None:
    """Forget what was found (tests that change PATH)."""
    bwrap_path.cache_clear()
    _probe_bwrap.cache_clear()
    isolation.cache_clear()
