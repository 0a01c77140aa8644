"""The Deck itself: what it is made of, how it opens and closes, start-up."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.roles import User
from agentdeck.daemon.deck.agents import Agents
from agentdeck.daemon.deck.changes import Changes
from agentdeck.daemon.deck.events import Events
from agentdeck.daemon.deck.health import Health
from agentdeck.daemon.deck.hosting import Hosting
from agentdeck.daemon.deck.inbox import Inbox
from agentdeck.daemon.deck.knowledge import Knowledge
from agentdeck.daemon.deck.lookups import Lookups
from agentdeck.daemon.deck.orchestration import Orchestration
from agentdeck.daemon.deck.schedules import Schedules
from agentdeck.daemon.deck.team import Team
from agentdeck.daemon.deck.triggers import Triggers
from agentdeck.daemon.hub import EventHub
from agentdeck.daemon.identity import Identity
from agentdeck.hooks import http_door
from agentdeck.hooks.bridge import HookBridge
from agentdeck.hooks.http_door import Said
from agentdeck.hooks.protocol import HookReply, HookRequest
from agentdeck.notify.service import Notifier
from agentdeck.orchestration.service import Orchestrator
from agentdeck.runner.runner import Runner
from agentdeck.runner.steering import Steering, owned_elsewhere, reconcile_stale
from agentdeck.settings import Settings
from agentdeck.store.memory import MemoryStore
from agentdeck.store.store import Store
from agentdeck.store.usage import UsageStore

if TYPE_CHECKING:
    from agentdeck.mockmodel import MockModel
    from agentdeck.runner.warm import Warm

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Collaborators:
    """What the Deck steers through beside the store, the runner and the hub."""

    steering: Steering
    hooks: HookBridge
    orchestration: Orchestrator
    notifier: Notifier
    identity: Identity
    usage: UsageStore


class Deck(
    Agents,
    Inbox,
    Changes,
    Events,
    Knowledge,
    Team,
    Orchestration,
    Lookups,
    Health,
    Hosting,
    Triggers,
    Schedules,
):
    """What the daemon serves — store, runner, event hub — behind one API.

    The web layer, the CLI's embedded mode and the daemon's own start-up steer
    agents through these methods; none of them touches the runner, the store or
    the hub (they are private to the Deck).
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        runner: Runner,
        hub: EventHub,
        parts: Collaborators,
        *,
        embedded: bool = False,
    ) -> None:
        """Built by the composition root (``daemon.compose.open_deck``), which made
        and started each collaborator; the Deck only holds them."""
        self.settings = settings
        self._store = store
        self._runner = runner
        self._hub = hub
        self._steering = parts.steering
        self._memory: MemoryStore = runner.memory.records
        self._hooks = parts.hooks
        self._orchestration = parts.orchestration
        self._notifier = parts.notifier
        self.identity = parts.identity
        self._usage_records = parts.usage
        self._embedded = embedded

    async def close(self) -> None:
        """Stop every agent gracefully (then by force), flush the log."""
        try:
            await self.stop_scheduling()
            await self.stop_reaping()
            if self._host is not None:
                await self._host.close()  # claims nothing more
            # A daemon suspends what runs, to carry it on at its next start; one
            # command's agents stop with it, as an `agentdeck run`'s do.
            await self._runner.shutdown(suspend=not self._embedded)
            if self._host is not None:
                await self._host.stopped()  # what it suspended, queued for another host
            await self._runner.memory.drain()
        finally:
            self._orchestration.close()
            await self._notifier.stop()
            await self._hub.stop()
            await self._store.close()

    # -- one command's own (an embedded deck: the CLI without a daemon) ----------------

    def adopt(self, warm: Warm, model: MockModel | None = None) -> None:
        """A Claude Code process the command spawned before the deck opened
        (``cli.early``), offered to the agent it was spawned for."""
        self._runner.adopt(warm, model)

    async def stop_now(self, reason: str) -> None:
        """Every agent of this deck stops now, left ``interrupted`` (a stop signal
        to the command: ``cli.ending``)."""
        await self._runner.stop_now(reason)

    # -- serving ---------------------------------------------------------------------

    async def bootstrap(self, file_token: str) -> User | None:
        """A deck without users gets ``admin`` owning the token file's token."""
        return await self.identity.bootstrap(file_token)

    async def handle_hook(self, request: HookRequest) -> HookReply:
        """What the hook socket of hand-started Claude Code sessions answers with."""
        return await self._hooks.handle(request)

    def hook_event(self, body: bytes, *, by: str) -> Callable[[Said], Awaitable[bytes]]:
        """The socket's exchange over the API (``POST /api/hooks/event``): ``body`` is
        a request line, the session ``by``'s. ``UsageError`` at once for a body that is
        no hook event; else the exchange to run, given where to write a pending
        notice (a person is asked): it gives the reply line (``hooks.http_door``)."""
        return partial(http_door.answer, self._hooks.handle, http_door.parsed(body, by))

    async def start_notifying(self, base_url: str) -> None:
        """Follow the log for the notification targets; links point at ``base_url``."""
        await self._notifier.start(base_url)

    async def refuse_starts(self) -> None:
        """From now on no agent starts, and those starting stop now (suspended):
        the daemon is stopping. The scheduler stops first: a run that comes due now
        stays due (its catch-up rule decides at the next start), not failed."""
        await self.stop_scheduling()
        await self._runner.refuse_starts(suspend=True)

    async def stop_feeds(self) -> None:
        """End notifications and every follower of the live feed (streams)."""
        await self._notifier.stop()
        await self._hub.stop()

    # -- start-up --------------------------------------------------------------------

    async def reconcile(self) -> list[Agent]:
        """Agents the store still has as live, after a crash or a restart.

        Leftover Claude Code processes are stopped; agents asked to survive
        restarts are resumed in their Claude session, the others are marked
        ``interrupted``. Agents supervised by a live ``agentdeck run`` elsewhere
        are left to it.
        """
        out = []
        live = [s for s in AgentState if s.is_live]
        found = await self._store.list_agents(states=live, limit=100_000, include_archived=True)
        # Agents a clean shutdown suspended mid-turn, to be carried on now.
        found += [
            a
            for a in await self._store.list_agents(
                states=[AgentState.INTERRUPTED], limit=100_000, include_archived=True
            )
            if a.extra.get("resume_at_start")
        ]
        for agent in found:
            if owned_elsewhere(agent):
                continue
            was_busy = agent.state != AgentState.IDLE
            agent = await reconcile_stale(
                self._store, agent, grace=self.settings.stop_grace_seconds
            )
            if agent.spec.resume_on_restart and not agent.session_id and was_busy:
                # Stopped before its Claude session began: start it afresh.
                try:
                    agent = (await self._runner.relaunch(agent.id, keep_alive=True)).agent
                except Exception as exc:  # noqa: BLE001 - one agent must not stop the daemon
                    logger.warning("could not restart agent %s: %s", agent.id, exc)
            elif agent.spec.resume_on_restart and agent.session_id:
                try:
                    # A turn that was cut short is continued; an idle agent
                    # just gets its process back, waiting for a message.
                    text = await self._orchestration.resume_text(agent) if was_busy else None
                    session = await self._runner.resume(
                        agent.id, text, keep_alive=True, idle=not was_busy
                    )
                    agent = session.agent
                except Exception as exc:  # noqa: BLE001 - one agent must not stop the daemon
                    logger.warning("could not resume agent %s: %s", agent.id, exc)
            out.append(agent)
        await self._runner.merges.recover()
        return out
