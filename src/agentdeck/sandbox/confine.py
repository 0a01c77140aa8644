"""One agent's confinement: the servers outside, the command line, the files.

``Confinement.open`` makes a private directory (mode 0700: the relay's sockets
and the sandbox's ``/tmp``), starts the allow-list proxy and, for a model
endpoint on loopback, a forward to it, and writes the launcher that the SDK
runs in place of the Claude Code binary: ``exec setsid bwrap … -- relay … --
claude "$@"``. ``close`` stops the servers and removes the directory.

The model endpoint is always reachable: on loopback through a forward (the
agent uses the same URL inside), elsewhere through the proxy, which lets its
host through whatever the allow-list says.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import shlex
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from agentdeck.core.sandbox import NetworkMode, SandboxSpec, domain_allowed
from agentdeck.sandbox import seccomp
from agentdeck.sandbox.plan import (
    CREDENTIALS,
    PRIVATE_STATE,
    PROJECT_CONFIG,
    PROXY_PORT,
    STATE_JSON,
    UNIX_FILTER,
    Plan,
    project_slug,
)
from agentdeck.sandbox.proxy import AllowlistProxy, Forward
from agentdeck.sandbox.support import bwrap_path, sandbox_uid
from agentdeck.settings import Settings

logger = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "https://api.anthropic.com"
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})
Blocked = Callable[[str, int], None]
PREFIX = "agentdeck-sbx-"
_swept: list[bool] = []
PRIVILEGED_PORTS = 1024
LOW_PORT_OFFSET = 40000  # a model endpoint on loopback port N < 1024 is N + this inside


def base_dir() -> Path:
    """Where every agent's private directory lives: one directory of agentdeck's
    (0700), which each sandbox hides should a writable place (``/tmp``) hold it."""
    return Path(tempfile.gettempdir()) / f"{PREFIX}{os.geteuid()}"


def sweep_stale() -> None:
    """Remove the private directories a process that died without closing its
    sandboxes left behind (a daemon killed with SIGKILL): their ``/tmp`` may
    hold an agent's files. Once per process."""
    if _swept:
        return
    _swept.append(True)
    for parent in (base_dir(), Path(tempfile.gettempdir())):
        for path in parent.glob(f"{PREFIX}*-*"):
            pid = path.name.removeprefix(PREFIX).split("-", 1)[0]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def endpoint_of(url: str | None) -> tuple[str, int, bool]:
    """``(host, port, on_loopback)`` of a model endpoint URL."""
    parts = urlsplit(url or DEFAULT_ENDPOINT)
    host = (parts.hostname or "api.anthropic.com").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return host, port, is_loopback(host)


def _netloc_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class Confinement:
    spec: SandboxSpec
    plan: Plan
    directory: Path
    launcher: Path | None = None
    servers: list[AllowlistProxy | Forward] = field(default_factory=list)
    model_url: str | None = None  # the model endpoint as the agent reaches it, if moved

    @classmethod
    async def open(
        cls,
        spec: SandboxSpec,
        *,
        workspace: Path,
        settings: Settings,
        endpoint: str | None,
        on_blocked: Blocked,
    ) -> Confinement:
        """Start what the sandbox needs outside; ``close`` undoes it."""
        await asyncio.to_thread(sweep_stale)
        plan = await asyncio.to_thread(_lay_out, spec, workspace, settings)
        directory = plan.private_tmp.parent
        made = cls(spec, plan, directory)
        try:
            await made._serve(endpoint, on_blocked, settings.sandbox_hosts)
        except BaseException:
            await made.close()
            raise
        return made

    async def _serve(
        self, endpoint: str | None, on_blocked: Blocked, hosts: Mapping[str, str]
    ) -> None:
        if not self.plan.own_network:
            return
        host, port, local = endpoint_of(endpoint)
        allowed_domains = (
            self.spec.allowed_domains if self.spec.network is NetworkMode.ALLOWLIST else ()
        )

        def allowed(name: str, to_port: int) -> bool:
            if (name, to_port) == (host, port):
                return True  # the model endpoint, always
            return domain_allowed(name, allowed_domains)

        proxy = AllowlistProxy(allowed, on_blocked, hosts)
        await proxy.start(self.plan.sockets / "proxy.sock")
        self.servers.append(proxy)
        self.plan.forwards[PROXY_PORT] = "proxy.sock"
        if local and port != PROXY_PORT:
            forward = Forward(host, port)
            await forward.start(self.plan.sockets / "model.sock")
            self.servers.append(forward)
            # Binding a port below 1024 takes a capability the sandbox does not
            # have: such an endpoint is reached inside on a port above, and told so.
            inside = port if port >= PRIVILEGED_PORTS else LOW_PORT_OFFSET + port
            self.plan.forwards[inside] = "model.sock"
            if inside != port and endpoint is not None:
                self.model_url = urlunsplit(
                    urlsplit(endpoint)._replace(netloc=f"{_netloc_host(host)}:{inside}")
                )

    def env(self) -> dict[str, str]:
        """What the confined process is told: where the proxy is, and where its
        config directory is (always said, so that its state file is the one in
        its own view, never ``~/.claude.json``)."""
        out = {
            "AGENTDECK_SANDBOX": str(self.spec.mode),
            "CLAUDE_CONFIG_DIR": str(self.plan.claude_config),
        }
        if self.model_url is not None:
            out["ANTHROPIC_BASE_URL"] = self.model_url
        if self.plan.own_network:
            proxy = f"http://127.0.0.1:{PROXY_PORT}"
            local = "localhost,127.0.0.1,::1"
            out.update(
                HTTP_PROXY=proxy,
                HTTPS_PROXY=proxy,
                http_proxy=proxy,
                https_proxy=proxy,
                NO_PROXY=local,
                no_proxy=local,
            )
        return out

    def command(self, program: Sequence[str]) -> list[str]:
        return self.plan.argv(program)

    def rebind(self, on_blocked: Blocked) -> None:
        """Where its proxy reports a refused connection from now on (a warm
        process's confinement, once an agent claims it)."""
        for server in self.servers:
            if isinstance(server, AllowlistProxy):
                server.on_blocked = on_blocked

    def write_launcher(self, program: str) -> Path:
        """A script the SDK runs as if it were Claude Code: the same arguments
        reach Claude Code, inside the sandbox.

        bubblewrap runs in a session of its own (``setsid``, which keeps the
        pid: the launcher is no process group leader): a terminal's Ctrl-C or
        hang-up reaches the deck, which stops the sandbox itself. Otherwise it
        would kill bubblewrap's outer process only, and the sandbox, in a session
        of its own already, would run on out of reach of the pid the deck holds,
        keeping Claude Code's output open."""
        launcher = self.directory / "claude"
        setsid = shutil.which("setsid")
        line = shlex.join([*([setsid] if setsid else []), *self.command([program])])
        launcher.write_text(f'#!/bin/sh\nexec {line} "$@"\n')
        launcher.chmod(0o700)
        self.launcher = launcher
        return launcher

    async def close(self) -> None:
        for server in self.servers:
            try:
                await server.close()
            except Exception:  # noqa: BLE001 - closing must go on
                logger.warning("a sandbox server did not close", exc_info=True)
        self.servers.clear()
        await asyncio.to_thread(shutil.rmtree, self.directory, True)


def _lay_out(spec: SandboxSpec, workspace: Path, settings: Settings) -> Plan:
    """The agent's private directory and what its plan binds: its ``/tmp``, its
    sockets, the seccomp filters, its own copy of Claude Code's state; the places
    in Claude Code's config directory that its state is bound over."""
    base = base_dir()
    base.mkdir(mode=0o700, exist_ok=True)
    base.chmod(0o700)
    directory = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=base))
    try:
        return _fill(directory, spec, workspace, settings, base)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise


def _fill(
    directory: Path, spec: SandboxSpec, workspace: Path, settings: Settings, base: Path
) -> Plan:
    directory.chmod(0o700)
    for name in ("tmp", "run", "config"):
        (directory / name).mkdir(mode=0o700)
    config = claude_config(settings)
    config.mkdir(parents=True, exist_ok=True)
    view = directory / "config"
    entries = _view(config, view, state_file(settings), workspace.resolve())
    with contextlib.suppress(OSError):  # an empty directory: git shows nothing
        (workspace / PROJECT_CONFIG).mkdir(exist_ok=True)
    filters = directory / "seccomp.bpf", directory / "seccomp-no-unix.bpf"
    filters[0].write_bytes(seccomp.program())
    filters[1].write_bytes(seccomp.program(unix_sockets=False))
    (directory / "run" / UNIX_FILTER).write_bytes(seccomp.unix_only())
    plan = Plan(
        spec=spec,
        workspace=workspace.resolve(),
        home=Path.home(),
        agentdeck_home=settings.home_dir,
        claude_config=config,
        private_tmp=directory / "tmp",
        sockets=directory / "run",
        bwrap=bwrap_path() or "bwrap",
        config_view=view,
        config_entries=entries,
        uid=sandbox_uid(),
        seccomp=filters[0],
        seccomp_no_unix=filters[1],
        hidden=(base,),
    )
    return plan


def claude_config(settings: Settings) -> Path:
    return (settings.claude_config_dir or Path("~/.claude")).expanduser().resolve()


def state_file(settings: Settings) -> Path:
    """Claude Code's state file: in its config directory when one is set, else
    ``~/.claude.json``."""
    if settings.claude_config_dir is not None:
        return claude_config(settings) / ".claude.json"
    return Path("~/.claude.json").expanduser()


def _view(config: Path, view: Path, state: Path, workspace: Path) -> tuple[str, ...]:
    """Lay out the agent's view of Claude Code's config directory: a place for
    each of the user's entries (bound in read-only), its project's transcripts
    (made in the user's directory too, where resume finds them), its own state
    and a copy of the state file. Returns the entries bound in."""
    private = {*PRIVATE_STATE, "projects", STATE_JSON, CREDENTIALS}
    entries: list[str] = []
    for entry in sorted(config.iterdir()):
        if entry.name in private or entry.name.startswith(f"{STATE_JSON}."):
            continue  # the state file's temporary copies and backups: its own are private
        try:
            if not entry.exists():  # a dangling link: nothing to bind
                continue
            is_dir = entry.is_dir()
        except OSError:
            continue
        (view / entry.name).mkdir() if is_dir else (view / entry.name).touch()
        entries.append(entry.name)
    slug = project_slug(str(workspace))
    project = Path("projects", slug) if slug is not None else Path("projects")
    (config / project).mkdir(parents=True, exist_ok=True)
    (view / project).mkdir(parents=True)
    if (config / CREDENTIALS).is_file():
        (view / CREDENTIALS).touch()
    for name in PRIVATE_STATE:
        (view / name).mkdir()
    with contextlib.suppress(OSError):  # none, or being replaced: the agent starts afresh
        shutil.copyfile(state, view / STATE_JSON)
    if not (view / STATE_JSON).exists():
        (view / STATE_JSON).write_text("{}")
    return tuple(entries)
