"""The bubblewrap command line that confines one agent's Claude Code process.

The sandbox sees the host's files read-only, with, in this order (a later mount
covers an earlier one):

- a private ``/tmp`` and ``/run``, its own ``/dev`` and ``/proc`` (a pid
  namespace of its own: no other process, no daemon's ``/proc/<pid>/environ``;
  no Unix socket another program left in ``/tmp`` or ``/run``); what the sandbox
  runs (Claude Code, the relay, its Python) stays visible, read-only, if it
  lives there;
- agentdeck's home hidden under an empty tmpfs (token, database, payloads,
  logs, the hook socket, other agents' workspaces);
- Claude Code's config directory writable (sessions, transcripts), but its
  settings, hooks, agents, commands and skills read-only, so an agent cannot
  plant what a later unsandboxed session would run;
- the workspace and the profile's ``allow_write`` places writable; its
  ``deny_write`` places read-only again; its ``deny_read`` places hidden
  (an empty tmpfs over a directory, ``/dev/null`` over a file);
- ``/run/agentdeck`` holding the relay's Unix sockets (proxy, model endpoint).

No ``--die-with-parent``: a supervisor killed outright leaves Claude Code running
as it would unsandboxed, so it still writes its session on the way out when the
deck stops it, and the session can be resumed (reconcile and ``kill`` find it by
its process tree).

With a network namespace of its own (network ``off`` or ``allowlist``) the
process reaches outside only through ``relay.py``; with ``open`` it shares the
host's network.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentdeck.core.sandbox import NetworkMode, SandboxSpec, absolute

RUN_DIR = "/run/agentdeck"
RELAY = Path(__file__).with_name("relay.py")
PROXY_PORT = 3128
# Claude Code's own files an agent may not change: what a later session runs.
PROTECTED_CONFIG = (
    "settings.json",
    "settings.local.json",
    "CLAUDE.md",
    "agents",
    "commands",
    "skills",
    "hooks",
    "plugins",
    "output-styles",
)


@dataclass
class Plan:
    spec: SandboxSpec
    workspace: Path
    home: Path  # the user's home (for ~ paths)
    agentdeck_home: Path
    claude_config: Path  # Claude Code's config directory
    claude_json: Path  # Claude Code's state file (~/.claude.json, or in the config dir)
    private_tmp: Path  # mounted as /tmp
    sockets: Path  # mounted as /run/agentdeck
    forwards: dict[int, str] = field(default_factory=dict)  # port inside -> socket name
    bwrap: str = "bwrap"
    python: str = sys.executable

    @property
    def own_network(self) -> bool:
        return self.spec.network is not NetworkMode.OPEN

    def writable(self) -> list[str]:
        ws, home = str(self.workspace), str(self.home)
        places = [absolute(p, workspace=ws, home=home) for p in self.spec.allow_write]
        return list(dict.fromkeys([*places, ws]))

    def argv(self, command: Sequence[str]) -> list[str]:
        """``bwrap … -- [relay …] -- command``."""
        args = [
            self.bwrap,
            "--new-session",
            "--unshare-user-try",
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
        args += self._config()
        ws, home = str(self.workspace), str(self.home)
        for place in self.writable():
            if Path(place).exists():
                args += ["--bind", place, place]
        for path in (absolute(p, workspace=ws, home=home) for p in self.spec.deny_write):
            if Path(path).exists():
                args += ["--ro-bind", path, path]
        for path in (absolute(p, workspace=ws, home=home) for p in self.spec.deny_read):
            args += self._hide(path)
        args += ["--bind", str(self.sockets), RUN_DIR, "--chdir", ws, "--"]
        if self.own_network and self.forwards:
            relay = [f"{port}={RUN_DIR}/{name}" for port, name in sorted(self.forwards.items())]
            args += [self.python, "-S", "-B", str(RELAY), *relay, "--"]
        return [*args, *command]

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

    def _config(self) -> list[str]:
        args: list[str] = []
        config = str(self.claude_config)
        if self.claude_config.is_dir():
            args += ["--bind", config, config]
            for name in PROTECTED_CONFIG:
                path = self.claude_config / name
                if path.exists():
                    args += ["--ro-bind", str(path), str(path)]
        if self.claude_json.is_file():
            args += ["--bind", str(self.claude_json), str(self.claude_json)]
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
