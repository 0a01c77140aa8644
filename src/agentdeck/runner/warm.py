"""Claude Code processes started before they are asked for (the daemon's warm pool).

Booting Claude Code is most of what an agent's start costs. After an agent
starts, the daemon starts the next one's process ahead of time, with the same
options, under an agent id and an empty workspace reserved for it (nothing is
recorded: the id appears nowhere until an agent claims it). The next agent with
the same spec (but for its prompt and name) that would get a new empty
workspace takes that id and workspace, and adopts the process if what Claude
Code was given at spawn (command line, environment, working directory) is
exactly what it would be given now; otherwise the warm process is stopped and
the agent starts cold. What Claude Code learns after spawn (the callbacks,
hooks, in-process MCP servers of the ``initialize`` request, the prompt) comes
from the claiming agent as in a cold start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentdeck.core.agent import AgentSpec
from agentdeck.runner import procs, sdk_private
from agentdeck.runner.sandboxing import Sandboxing
from agentdeck.sandbox.proxy import Blocked

if TYPE_CHECKING:
    from claude_agent_sdk.types import ClaudeAgentOptions

    from agentdeck.runner.sdk_private import Transport

logger = logging.getLogger(__name__)

# A warm process reads Claude Code's settings when it boots: one older than
# this is not used (its settings may have changed since).
MAX_AGE_SECONDS = 600.0
STOP_GRACE_SECONDS = 2.0


def template_of(spec: AgentSpec) -> AgentSpec:
    """What a warm process is started for: the spec but for its prompt and name."""
    return replace(spec, prompt="", name=None)


def warmable(spec: AgentSpec, workspace_files: bool) -> bool:
    """Whether the agent would start in a new, empty workspace (what a warm one has);
    a recorded one starts cold (its process must reach the recording proxy)."""
    if spec.record:
        return False
    return spec.cwd is None and spec.workspace in (None, "new") and not workspace_files


class StderrSink:
    """A warm process's stderr callback: kept until an agent claims the process,
    then handed to that agent's own."""

    def __init__(self) -> None:
        self.early: deque[str] = deque(maxlen=50)
        self.target: Callable[[str], Any] | None = None

    def __call__(self, line: str) -> None:
        (self.target or self.early.append)(line)

    def attach(self, target: Callable[[str], Any]) -> None:
        for line in self.early:
            target(line)
        self.target = target


def _spawned(options: ClaudeAgentOptions) -> tuple[list[str], dict[str, str], str]:
    """What Claude Code is given at spawn for these options (as ``ClaudeSDKClient``
    spawns it): its command line, our part of its environment, its directory."""
    return sdk_private.spawn_command(options), dict(options.env), str(options.cwd)


async def _stopped(transport: Transport) -> None:
    process = sdk_private.process_of(transport)
    pid = getattr(process, "pid", None)
    if isinstance(pid, int):
        await asyncio.to_thread(procs.terminate_tree, pid, STOP_GRACE_SECONDS)
    try:
        await transport.close()  # reaps it
    except Exception as exc:  # noqa: BLE001 - stopped above: its clean-up may find it gone
        logger.debug("a warm process's transport did not close: %r", exc)
    # The SDK's close leaves the process's stdout pipe open (a session reads it to
    # its end first; a warm process is never read): closed here, not left to the
    # garbage collector (an open fd meanwhile, then a ResourceWarning).
    if process is not None:
        try:
            async with asyncio.timeout(STOP_GRACE_SECONDS):
                await process.aclose()
        except Exception as exc:  # noqa: BLE001 - gone already
            logger.debug("a warm process's pipes did not close: %r", exc)


@dataclass
class Warm:
    """One warm process, with the id and workspace reserved for its agent."""

    agent_id: str
    cwd: Path
    template: AgentSpec
    transport: Transport
    spawned: tuple[list[str], dict[str, str], str]
    stderr: StderrSink
    # Its confinement when its profile confines the whole process (its launcher,
    # its network proxy), bound to the reserved workspace: the claiming agent's.
    sandboxing: Sandboxing | None = None
    born: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int | None:
        return getattr(sdk_private.process_of(self.transport), "pid", None)

    def fits(self, options: ClaudeAgentOptions) -> bool:
        """Whether a process spawned for ``options`` would be this one."""
        return _spawned(options) == self.spawned

    def take_sandboxing(self, on_blocked: Blocked) -> Sandboxing | None:
        """Its confinement, now the claiming agent's (whose log its proxy's
        refusals go to from now on); None when it runs unconfined."""
        box, self.sandboxing = self.sandboxing, None
        if box is not None and box.confinement is not None:
            box.confinement.rebind(on_blocked)
        return box

    def usable(self) -> bool:
        return procs.is_running(self.pid) and time.monotonic() - self.born < MAX_AGE_SECONDS

    @classmethod
    async def start(
        cls,
        agent_id: str,
        cwd: Path,
        template: AgentSpec,
        options: ClaudeAgentOptions,
        *,
        sandboxing: Sandboxing | None = None,
    ) -> Warm:
        sink = StderrSink()
        options = replace(options, stderr=sink)
        transport = sdk_private.new_transport(options)
        # Spawns it; nothing is sent until it is claimed. A stop meanwhile (the
        # pool closing) lets the spawn end, then stops what it started.
        connecting = asyncio.ensure_future(transport.connect())
        try:
            await asyncio.shield(connecting)
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):
                await connecting
            await _stopped(transport)
            raise
        return cls(
            agent_id, cwd, template, transport, _spawned(options), sink, sandboxing=sandboxing
        )

    async def stop(self, *, keep_cwd: bool = False) -> None:
        """Its process tree stopped and reaped; its workspace removed unless an
        agent has it now."""
        await _stopped(self.transport)
        box, self.sandboxing = self.sandboxing, None
        if box is not None:  # not claimed: its confinement goes with it
            await box.close()
        if not keep_cwd:
            await asyncio.to_thread(shutil.rmtree, self.cwd, True)


class WarmPool:
    """Up to ``size`` warm processes per template (0: none, the pool is off)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._warm: list[Warm] = []
        self._filling: dict[asyncio.Task[None], AgentSpec] = {}
        self._stopping: set[asyncio.Future[None]] = set()
        self._expiries: dict[str, asyncio.TimerHandle] = {}  # by agent id
        self._closed = False

    def __len__(self) -> int:
        return len(self._warm)

    def pids(self) -> list[int]:
        return [pid for w in self._warm if (pid := w.pid) is not None]

    def take(self, spec: AgentSpec) -> Warm | None:
        """A usable warm process for this spec's template, now the caller's."""
        template = template_of(spec)
        for warm in list(self._warm):
            if warm.template != template:
                continue
            self._warm.remove(warm)
            if (expiry := self._expiries.pop(warm.agent_id, None)) is not None:
                expiry.cancel()
            if warm.usable():
                return warm
            self._later(warm.stop())
        return None

    def add(self, warm: Warm) -> None:
        """A process started ahead by someone else (an embedded run's, spawned
        before its runner existed): the next agent of its template may adopt it;
        unclaimed, it goes when the pool closes."""
        if self._closed:
            self._later(warm.stop())
            return
        self._warm.append(warm)

    def discard(self, warm: Warm, *, keep_cwd: bool) -> None:
        """A warm process taken but not used: stopped in the background."""
        self._later(warm.stop(keep_cwd=keep_cwd))

    def fill(
        self,
        spec: AgentSpec,
        start: Callable[[AgentSpec], Awaitable[Warm | None]],
        *,
        after: Coroutine[Any, Any, None],
    ) -> None:
        """Start one more warm process for this spec's template, in the background
        once ``after`` is done. The pool holds ``size`` processes in all: the
        oldest warm one of another template makes room (the options used last are
        the likeliest next); none is started when the pool is full of this
        template's or of processes still booting."""
        template = template_of(spec)
        have = sum(w.template == template for w in self._warm)
        have += sum(t == template for t in self._filling.values())
        if not self._closed and have < self.size:
            others = [w for w in self._warm if w.template != template]
            while others and len(self._warm) + len(self._filling) >= self.size:
                oldest = others.pop(0)
                self._warm.remove(oldest)
                self._later(oldest.stop())
        if self._closed or have >= self.size or len(self._warm) + len(self._filling) >= self.size:
            after.close()
            return
        task = asyncio.create_task(self._fill(template, start, after), name="warm-pool-fill")
        self._filling[task] = template
        task.add_done_callback(self._filling.pop)

    async def _fill(
        self,
        template: AgentSpec,
        start: Callable[[AgentSpec], Awaitable[Warm | None]],
        after: Coroutine[Any, Any, None],
    ) -> None:
        try:
            await after
            if self._closed:
                return
            warm = await start(template)
        except Exception as exc:  # noqa: BLE001 - a cold start then, nothing lost
            logger.warning("could not start a warm Claude Code: %s", exc)
            return
        if warm is None:
            return
        if self._closed:  # closed while it booted
            await warm.stop()
            return
        self._warm.append(warm)
        # Unclaimed for long, it goes (the settings it read at boot may be stale).
        self._expiries[warm.agent_id] = asyncio.get_running_loop().call_later(
            MAX_AGE_SECONDS, self._expire, warm
        )

    def _expire(self, warm: Warm) -> None:
        self._expiries.pop(warm.agent_id, None)
        if warm in self._warm:
            self._warm.remove(warm)
            self._later(warm.stop())

    def _later(self, stopping: Awaitable[None]) -> None:
        task = asyncio.ensure_future(stopping)
        self._stopping.add(task)  # waited for by close()
        task.add_done_callback(self._stopping.discard)

    async def close(self) -> None:
        """No more warm processes; those there are stopped (and those booting once up)."""
        self._closed = True
        for expiry in self._expiries.values():
            expiry.cancel()
        for task in self._filling:
            task.cancel()  # waiting for its turn, or booting (``Warm.start`` stops it then)
        if self._filling or self._stopping:
            await asyncio.gather(*self._filling, *self._stopping, return_exceptions=True)
        warm, self._warm = self._warm, []
        await asyncio.gather(*(w.stop() for w in warm), return_exceptions=True)
