"""The bubblewrap command line that confines one agent's Claude Code process.

The process holds no privilege: a user namespace of its own in which it is an
unprivileged uid (``nobody`` when agentdeck runs as root; the same uid
otherwise), every capability dropped, no further user namespaces
(``--disable-userns``), ``no_new_privs``, and the seccomp filter of
``seccomp.py`` (no mount, namespace, ptrace, keyring, bpf or io_uring calls; no
Unix socket). What it writes still belongs to the user who runs agentdeck: its
uid inside maps to that user's.

The sandbox sees the host's files read-only, with, in this order (a later mount
covers an earlier one):

- a private ``/tmp`` and ``/run``, its own ``/dev`` and ``/proc`` (a pid
  namespace of its own: no other process, no daemon's ``/proc/<pid>/environ``);
  what the sandbox runs (Claude Code, the relay, its Python) stays visible,
  read-only, if it lives there;
- agentdeck's home hidden under an empty tmpfs (token, database, payloads,
  logs, the hook socket, other agents' workspaces);
- the workspace and the profile's ``allow_write`` places writable; its
  ``deny_write`` places read-only again; its ``deny_read`` places hidden
  (an empty tmpfs over a directory, ``/dev/null`` over a file);
- every agent's private directory hidden, should a writable place (``/tmp``)
  hold them;
- Claude Code's config directory read-only, whatever it holds or lacks
  (settings, hooks, agents, commands, skills, plugins: what a later session
  runs), but for this agent's own state: its project's transcripts, its
  credentials (a login refreshes them), and a private copy of the rest
  (``.claude.json``, shell snapshots, session environments, todos, …) that no
  other agent sees and that goes with the sandbox;
- ``/run/agentdeck``, read-only, holding the relay's Unix sockets (proxy,
  model endpoint).

No ``--die-with-parent``: a supervisor killed outright leaves Claude Code running
as it would unsandboxed, so it still writes its session on the way out when the
deck stops it, and the session can be resumed (reconcile and ``kill`` find it by
its process tree).

With a network namespace of its own (network ``off`` or ``allowlist``) the
process reaches outside only through ``relay.py``; with ``open`` it shares the
host's network.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentdeck.core.sandbox import NetworkMode, SandboxSpec, absolute
from agentdeck.sandbox.support import confinement_flags

RUN_DIR = "/run/agentdeck"
RELAY = Path(__file__).with_name("relay.py")
PROXY_PORT = 3128
# Claude Code's own state, private to each sandboxed agent: bound from the
# agent's directory over the config directory's (made there first: a mount needs
# a place). A shell snapshot is what the session's next Bash call sources.
PRIVATE_STATE = (
    "shell-snapshots",
    "session-env",
    "sessions",
    "todos",
    "statsig",
    "telemetry",
    "plans",
    "debug",
    "file-history",
    "backups",
    "cache",
    "paste-cache",
    "ide",
)
CREDENTIALS = ".credentials.json"
PROJECT_CONFIG = ".claude"  # in the workspace: read-only, whether it held anything or not
SLUG_MAX = 200  # Claude Code's limit on a project directory's name
SECCOMP_FD = 9


def project_slug(cwd: str) -> str | None:
    """The name Claude Code gives the directory of a project's transcripts
    (``projects/<slug>``); None past its length limit, where it adds a hash."""
    slug = re.sub(r"[^a-zA-Z0-9]", "-", cwd)
    return slug if len(slug) <= SLUG_MAX else None


@dataclass
class Plan:
    spec: SandboxSpec
    workspace: Path
    home: Path  # the user's home (for ~ paths)
    agentdeck_home: Path
    claude_config: Path  # Claude Code's config directory
    private_tmp: Path  # mounted as /tmp
    sockets: Path  # mounted as /run/agentdeck
    forwards: dict[int, str] = field(default_factory=dict)  # port inside -> socket name
    bwrap: str = "bwrap"
    python: str = sys.executable
    config_view: Path | None = None  # the agent's own config directory (``_config``)
    config_entries: tuple[str, ...] = ()  # the user's entries, bound into it read-only
    uid: int | None = None  # the unprivileged uid inside (agentdeck running as root)
    seccomp: Path | None = None  # the filter bubblewrap loads (seccomp.program)
    seccomp_no_unix: Path | None = None  # the same, refusing Unix sockets too
    hidden: tuple[Path, ...] = ()  # every agent's private directory, hidden

    @property
    def own_network(self) -> bool:
        return self.spec.network is not NetworkMode.OPEN

    @property
    def relayed(self) -> bool:
        return self.own_network and bool(self.forwards)

    def writable(self) -> list[str]:
        ws, home = str(self.workspace), str(self.home)
        places = [absolute(p, workspace=ws, home=home) for p in self.spec.allow_write]
        return list(dict.fromkeys([*places, ws]))

    def argv(self, command: Sequence[str]) -> list[str]:
        """``[sh -c 'exec "$@" 9<filter'] bwrap … -- [relay …] -- command``."""
        args = [
            self.bwrap,
            "--new-session",
            *confinement_flags(self.uid),
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            *(["--unshare-net"] if self.own_network else []),
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc",
            "--tmpfs", "/run",
            "--bind", str(self.private_tmp), "/tmp",
        ]  # fmt: skip
        for path in self.programs(command):
            args += ["--ro-bind", path, path]
        args += self._hide_dir(self.agentdeck_home)
        ws, home = str(self.workspace), str(self.home)
        writable = self.writable()
        for place in writable:
            if Path(place).exists():
                args += ["--bind", place, place]
        for path in (absolute(p, workspace=ws, home=home) for p in self.spec.deny_write):
            if Path(path).exists():
                args += ["--ro-bind", path, path]
        # Claude Code's project settings, hooks, agents, commands and skills: what
        # the user's own next session there runs. Made by ``confine`` when missing,
        # so the agent cannot create them either (unless a profile opens it).
        project_config = self.workspace / PROJECT_CONFIG
        if (
            project_config.is_dir()
            and not project_config.is_symlink()
            and not any(_under(Path(place), project_config) for place in writable)
        ):
            args += ["--ro-bind", str(project_config), str(project_config)]
        for path in (absolute(p, workspace=ws, home=home) for p in self.spec.deny_read):
            args += self._hide(path)
        for private in self.hidden:
            if any(_under(private, Path(place)) for place in writable):
                args += self._hide_dir(private)
        args += self._config()
        args += ["--ro-bind", str(self.sockets), RUN_DIR, "--chdir", ws]
        filter_file = self.seccomp if self.relayed else self.seccomp_no_unix
        if filter_file is not None:
            args += ["--seccomp", str(SECCOMP_FD)]
        args.append("--")
        if self.relayed:
            relay = [f"{port}={RUN_DIR}/{name}" for port, name in sorted(self.forwards.items())]
            unix = ["--seccomp", f"{RUN_DIR}/{UNIX_FILTER}"] if self.seccomp is not None else []
            args += [self.python, "-S", "-B", str(RELAY), *unix, *relay, "--"]
        args += command
        if filter_file is None:
            return args
        return ["/bin/sh", "-c", f'exec "$@" {SECCOMP_FD}<"$0"', str(filter_file), *args]

    def programs(self, command: Sequence[str]) -> list[str]:
        """What the sandbox runs (the command's program, the relay and the Python
        it runs on) where ``/tmp`` or ``/run`` would hide it: kept, read-only."""
        found = [Path(sys.prefix), RELAY.parent]
        if command and Path(command[0]).is_absolute():
            found.append(Path(command[0]).parent)
        out: list[str] = []
        for path in found:
            real = path.resolve()
            if real.parts[1:2] in (("tmp",), ("run",)) and real.is_dir():
                out.append(str(real))
        return list(dict.fromkeys(out))

    def project_dir(self) -> Path:
        """Where Claude Code keeps this workspace's transcripts: the only part of
        ``projects/`` the agent may write (all of it past the name's limit)."""
        slug = project_slug(str(self.workspace))
        projects = self.claude_config / "projects"
        return projects / slug if slug is not None else projects

    def _config(self) -> list[str]:
        """Claude Code's config directory as this agent sees it: its view (made by
        ``confine``: read-only, holding a place for each entry the user's has)
        over it; the user's entries bound in read-only; its project's transcripts
        and the credentials writable; its private state writable. Nothing is bound
        over a file another Claude Code may be replacing (``.claude.json``)."""
        view = self.config_view
        if view is None or not view.is_dir():
            return []
        config = str(self.claude_config)
        args = ["--ro-bind", str(view), config]
        for name in self.config_entries:  # one gone since (a temporary file) stays empty
            args += ["--ro-bind-try", f"{config}/{name}", f"{config}/{name}"]
        project = self.project_dir()
        if (view / project.relative_to(self.claude_config)).is_dir():
            args += ["--bind", str(project), str(project)]
        if (view / CREDENTIALS).is_file():
            args += ["--bind-try", f"{config}/{CREDENTIALS}", f"{config}/{CREDENTIALS}"]
        for name in (*PRIVATE_STATE, STATE_JSON):
            if (view / name).exists():
                args += ["--bind", str(view / name), f"{config}/{name}"]
        return args

    @staticmethod
    def _hide_dir(path: Path) -> list[str]:
        return ["--tmpfs", str(path)] if path.is_dir() else []

    @staticmethod
    def _hide(path: str) -> list[str]:
        if Path(path).is_dir():
            return ["--tmpfs", path]
        if Path(path).is_symlink() or Path(path).exists():
            return ["--ro-bind", "/dev/null", path]
        return []


UNIX_FILTER = "unix.bpf"  # in the sockets directory: the relay's part of the filter
STATE_JSON = ".claude.json"  # in the config directory: CLAUDE_CONFIG_DIR is always set


def _under(path: Path, place: Path) -> bool:
    return path == place or place in path.parents
