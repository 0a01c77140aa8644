"""A runner host: this process runs the agents of a shared deck that it claims.

``RunnerHost`` registers the host (``store.hosts``), then keeps three loops:

- **claims**: woken by a NOTIFY on the queue (PostgreSQL) or every
  ``runner_poll_seconds``, it takes the queued agents that fit it (labels,
  project roots: ``core.hosts.unfit``) within its free capacity, each with a
  lease and a fencing token, and starts them (``Runner.start_queued``);
- **heartbeat**: every ``runner_heartbeat_seconds`` it renews its leases; an
  agent whose lease it lost (expired while the host was stopped or cut off,
  claimed by another host since) is fenced — its writes are refused by the store
  and its Claude Code process is stopped here. A host that could not heartbeat
  for a whole lease fences itself from everything (the others may have its
  agents by now): never two live processes for one agent. An answer that comes
  a whole lease after its heartbeat was sent (the host stopped between the
  commit and reading it) is not trusted: the host asks again at once. An agent
  whose process ended while its lease was lost unbeknown to the host (its
  release finds another holder) is fenced all the same, and said so;
- **reaper** (``runner.reaping``): leases of lost hosts end their agents.

Its agents' steering commands come through the store (``Runner._serve_commands``,
woken by NOTIFY). At each turn's end it keeps the agent's Claude Code transcript in
the database (``store.transcripts``), so that another host can resume the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence

from agentdeck.core.agent import AgentState
from agentdeck.core.events import Notice, StoredEvent
from agentdeck.core.hosts import Host, Lease, unfit
from agentdeck.errors import AgentdeckError, Refused
from agentdeck.runner import steering, transcripts
from agentdeck.runner.reaping import Reaper
from agentdeck.runner.runner import Runner
from agentdeck.store import listen
from agentdeck.store.hosts import HostStore
from agentdeck.store.queue import live_count, queued_agents

logger = logging.getLogger(__name__)

_KEEP_TRANSCRIPT_ON = frozenset({"turn_completed", "tool_called"})
_LOST = "its lease was lost (expired or claimed by another host)"
_LOST_UNSEEN = "its lease was lost (expired or claimed by another host) before its process ended"


def reap_every(heartbeat_seconds: float) -> float:
    """How often expired leases are looked for: every heartbeat, at most a second."""
    return min(heartbeat_seconds, 1.0)


class RunnerHost:
    def __init__(self, runner: Runner, host: Host) -> None:
        settings = runner.settings
        self.runner = runner
        self.store = runner.store
        self.host = host.checked()
        self.hosts = HostStore.of(runner.store, settings)
        self.poll_seconds = settings.runner_poll_seconds
        self.epoch = 0
        self.leases: dict[str, Lease] = {}  # the agents this host runs, by id
        self.fenced: set[str] = set()  # agents it lost: their writes stay refused
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._starting: set[asyncio.Task[None]] = set()
        self._saving: dict[str, asyncio.Task[None]] = {}
        self._dirty: set[str] = set()
        self._kept_at: dict[str, float] = {}  # each transcript's mtime when last kept
        self._unsubscribe: Callable[[], None] | None = None
        self._last_beat = time.monotonic()
        self._event_loop: asyncio.AbstractEventLoop | None = None
        self.ran: set[str] = set()  # every agent this life of the host claimed
        self.reaper = Reaper(runner.store, self.hosts, own=(self.name, self._reaped_own))

    @property
    def name(self) -> str:
        return self.host.name

    async def start(self) -> None:
        """Register, take back what an earlier life of this host left, and serve."""
        self._event_loop = asyncio.get_running_loop()
        registered = await self.hosts.register(self.host)
        self.epoch = registered.epoch
        self._last_beat = time.monotonic()
        self.runner.host_name = self.name
        self.runner.merges.host = self.name  # its merge entries say so
        steering.set_this_host(self.name)
        self.store.fence_as(self.name)
        self.store.listen(listen.QUEUE, self._woken)
        self.store.listen(listen.COMMANDS, self._command_for)
        # A restart of this host ended its leases (``register``): what it ran is lost.
        await self.reaper.take_back(self.name)
        self._unsubscribe = self.store.subscribe(self._from_writer)
        loops = (self._claims(), self._heartbeats(), self._reaps())
        self._tasks = [asyncio.create_task(c, name=f"host-{self.name}") for c in loops]
        self._woken("")
        logger.info("runner host %s (epoch %d) serving", self.name, self.epoch)

    async def close(self) -> None:
        """Stop claiming; the caller stops the agents (``Runner.shutdown``) and then
        calls ``stopped`` to hand them on."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        self.store.unlisten(listen.QUEUE, self._woken)
        self.store.unlisten(listen.COMMANDS, self._command_for)
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    async def stopped(self) -> None:
        """The runner stopped its agents: those it suspended (and those asked to
        survive a restart) are queued for another host; the host is marked stopped,
        its leases released."""
        for task in list(self._saving.values()):
            with contextlib.suppress(Exception):
                await task
        try:
            await self.reaper.hand_on(self.name, sorted(self.ran))
        finally:
            self.leases.clear()
            with contextlib.suppress(AgentdeckError):
                await self.hosts.stop(self.name)

    # -- claims ------------------------------------------------------------------

    def _woken(self, _payload: str) -> None:
        self._wake.set()

    def _command_for(self, agent_id: str) -> None:
        """A steering command was queued: for one of ours (or, after a reconnect,
        maybe), the runner looks at once."""
        if not agent_id or agent_id in self.leases:
            self.runner.commands_waiting.set()

    async def _claims(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll_seconds):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self.claim_now()
            except Refused as exc:
                logger.error("runner host %s: %s", self.name, exc)
                await self._fence_all(str(exc))
            except Exception:
                logger.exception("runner host %s: claiming agents failed", self.name)

    async def claim_now(self) -> list[Lease]:
        """Claim the queued agents that fit, within the free capacity, and start them."""
        room = self.host.capacity - len(self.leases)
        if room <= 0 or self.fenced_out:
            return []
        # The fleet's limit of live agents is the cluster's, not one host's.
        room = min(room, self.runner.settings.max_live_agents - await live_count(self.store))
        if room <= 0:
            return []
        fitting = [
            a for a in await queued_agents(self.store, room * 4) if unfit(self.host, a.spec) is None
        ]
        if not fitting:
            return []
        taken = await self.hosts.claim(
            self.name, [a.id for a in fitting], n=room, epoch=self.epoch, queued_only=True
        )
        for lease in taken:
            self.fenced.discard(lease.agent_id)  # an agent it lost once, taken again
            self.leases[lease.agent_id] = lease
            self.ran.add(lease.agent_id)
            self.store.fence(lease.agent_id, lease.token)
            task = asyncio.create_task(self._run(lease), name=f"host-start-{lease.agent_id}")
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)
        if len(taken) == room:
            self._wake.set()  # more may wait
        return taken

    @property
    def fenced_out(self) -> bool:
        """No heartbeat landed for a whole lease: others may hold its agents now."""
        return time.monotonic() - self._last_beat > self.hosts.lease_seconds

    async def _run(self, lease: Lease) -> None:
        agent_id = lease.agent_id
        try:
            agent = await self.store.get_agent(agent_id)
            if agent.state is not AgentState.QUEUED:
                return
            marked = agent.with_changes(
                extra={**agent.extra, "host": self.name, "lease": lease.token},
                updated_at=time.time(),
            )
            await self.store.record(
                [
                    Notice(
                        agent_id=agent_id,
                        ts=time.time(),
                        kind="claimed",
                        message=f"claimed by runner host {self.name}",
                        detail={"host": self.name, "lease": lease.token},
                    )
                ],
                marked,
            )
            session = await self.runner.start_queued(marked)
            await session.finished.wait()
        except Exception as exc:  # noqa: BLE001 - the agent says why; the host goes on
            logger.warning("runner host %s: agent %s did not run: %s", self.name, agent_id, exc)
        finally:
            await self._let_go(agent_id, lease)

    async def _let_go(self, agent_id: str, lease: Lease) -> None:
        """The agent's process ended here: its transcript kept, its lease released."""
        saving = self._saving.pop(agent_id, None)
        if saving is not None:
            with contextlib.suppress(Exception):
                await saving
        if self.leases.get(agent_id) is lease:
            del self.leases[agent_id]
            if agent_id not in self.fenced:
                try:
                    released = await self.hosts.release(self.name, agent_id, lease.token)
                except AgentdeckError as exc:
                    logger.warning("runner host %s: %s not released: %s", self.name, agent_id, exc)
                    released = True  # as it was: not known lost (the lease expires by itself)
                if released:
                    self.store.unfence(agent_id)
                else:  # lost before a heartbeat said so: its late writes stay refused
                    await self._fence(agent_id, _LOST_UNSEEN)
            self._wake.set()  # room for another

    # -- heartbeats and fencing ------------------------------------------------

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.hosts.heartbeat_seconds)
            await self.beat()

    async def beat(self) -> list[str]:
        """One heartbeat: leases renewed; those lost fenced (their processes stopped).
        An answer that took longer than a lease is stale (the host was stopped
        between the commit and reading it): what it says is lost is fenced, and
        the host asks again, for what it says is held may have expired since."""
        if self.fenced_out:
            # Stopped (SIGSTOP) or cut off past the lease: the store refuses our
            # late writes; the heartbeat then says what is still ours.
            logger.warning("runner host %s: no heartbeat for a whole lease", self.name)
        fenced: list[str] = []
        while True:
            held = {a: lease.token for a, lease in self.leases.items()}
            sent = time.monotonic()
            try:
                lost = await self.hosts.heartbeat(self.name, held, epoch=self.epoch)
            except Refused as exc:
                await self._fence_all(str(exc))
                return [*fenced, *held]
            except Exception as exc:  # noqa: BLE001 - the database is away: retried next beat
                logger.warning("runner host %s: heartbeat failed: %s", self.name, exc)
                if self.fenced_out:
                    await self._fence_all("no heartbeat for a whole lease")
                return fenced
            stale = time.monotonic() - sent > self.hosts.lease_seconds
            if not stale:  # renewed at the commit, after ``sent``: they last from there
                self._last_beat = sent
            # Before anything of the agents is kept: a lost one is its new holder's.
            for agent_id in lost:
                await self._fence(agent_id, _LOST)
            fenced += lost
            if not stale:
                break
            logger.warning(
                "runner host %s: a heartbeat answered after a whole lease: asking again", self.name
            )
        self._keep_changed()
        return fenced

    async def _fence_all(self, why: str) -> None:
        for agent_id in list(self.leases):
            await self._fence(agent_id, why)

    async def _fence(self, agent_id: str, why: str) -> None:
        """This host no longer runs the agent: its writes stay refused, its process
        is stopped (nothing of its end is written: the agent's new holder or the
        reaper says what became of it)."""
        if agent_id in self.fenced:
            return
        self.fenced.add(agent_id)
        self.leases.pop(agent_id, None)
        logger.warning("runner host %s fenced from agent %s: %s", self.name, agent_id, why)
        session = self.runner.live(agent_id)
        if session is not None:
            with contextlib.suppress(Exception):
                await session.halt(reason=f"runner host {self.name} fenced: {why}")
        ended = self.runner.sessions.get(agent_id)
        if ended is not None and ended.finished.is_set():
            # Its last writes were refused: what it holds of the agent is stale (the
            # deck would show it running); the database says what became of it.
            del self.runner.sessions[agent_id]

    async def _reaped_own(self, agent_id: str) -> None:
        """This host's reaper found this host's own lease of the agent expired (it
        was stopped or cut off past the lease, its heartbeat not answered yet):
        fenced (its process stopped, its late writes refused), then its writes
        unfenced, for the lease they were fenced by is gone: the reaper's end of the
        agent is this store's to write."""
        await self._fence(agent_id, "its lease expired (found by this host's own reaper)")
        self.store.unfence(agent_id)

    # -- the reaper ---------------------------------------------------------------

    async def _reaps(self) -> None:
        merges_at = time.monotonic()
        while True:
            # At least every second: a lost host is found within its lease + 1 s.
            await asyncio.sleep(reap_every(self.hosts.heartbeat_seconds))
            try:
                await self.reaper.reap()
            except Exception:
                logger.exception("runner host %s: reaping lost leases failed", self.name)
            # A lost host's merges, taken again here (once a lease: the queue's rows).
            if time.monotonic() - merges_at >= self.hosts.lease_seconds:
                merges_at = time.monotonic()
                try:
                    await self.runner.merges.recover(hosts_only=True)
                except Exception:
                    logger.exception("runner host %s: taking lost merges failed", self.name)

    # -- transcripts ----------------------------------------------------------------

    def _from_writer(self, events: Sequence[StoredEvent]) -> None:
        """On the writer thread: a turn of one of our agents ended: keep its transcript."""
        # At each turn's end, and as a tool starts (a host lost mid-turn leaves
        # the turn's start to carry on from).
        moved = {e.agent_id for e in events if e.type in _KEEP_TRANSCRIPT_ON}
        loop = self._event_loop
        for agent_id in moved & set(self.leases):
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._save_soon, agent_id)

    def _keep_changed(self) -> None:
        """Transcripts Claude Code wrote to since they were kept (mid-turn too: a
        long tool call writes no event), kept again; a stat each, at each beat."""
        for agent_id in list(self.leases):
            session = self.runner.live(agent_id)
            if session is None:
                continue
            path = transcripts.path_of(self.runner.settings, session.agent)
            try:
                mtime = path.stat().st_mtime if path is not None else None
            except OSError:
                continue
            if mtime is not None and self._kept_at.get(agent_id) != mtime:
                self._kept_at[agent_id] = mtime
                self._save_soon(agent_id)

    def _save_soon(self, agent_id: str) -> None:
        if agent_id in self._saving and not self._saving[agent_id].done():
            self._dirty.add(agent_id)  # kept again once the save under way ends
            return
        self._saving[agent_id] = asyncio.create_task(self._save(agent_id))

    async def _save(self, agent_id: str) -> None:
        while True:
            self._dirty.discard(agent_id)
            if agent_id in self.fenced:
                return  # its new holder keeps it now
            try:
                agent = await self.store.get_agent(agent_id)
                await transcripts.keep(self.store, self.runner.settings, agent, self.name)
            except Exception as exc:  # noqa: BLE001 - kept at the next turn's end
                logger.warning("agent %s: its transcript was not kept: %s", agent_id, exc)
            if agent_id not in self._dirty:
                return
