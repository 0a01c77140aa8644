"""The Deck: what the daemon serves — store, runner, event hub — behind one API.

The web layer, the CLI's daemon client and (later) bridges all steer agents
through these methods; none of them touches the runner or the store directly.
"""

from __future__ import annotations

import logging
import time

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.approvals import Approval, ApprovalState, GrantScope
from agentdeck.core.asks import Ask, AskState
from agentdeck.core.events import Notice, StoredEvent
from agentdeck.core.notify import Target
from agentdeck.core.usage import Bucket, UsageGroup, UsageReport
from agentdeck.daemon.hub import EventHub
from agentdeck.daemon.identity import Identity
from agentdeck.hooks.bridge import HookBridge
from agentdeck.notify.config import load_targets
from agentdeck.notify.service import Notifier
from agentdeck.orchestration.service import Orchestrator
from agentdeck.orchestration.templates import resolve as resolve_template
from agentdeck.runner.runner import Runner
from agentdeck.runner.steering import (
    Steering,
    ensure_steerable,
    owned_elsewhere,
    reconcile_stale,
)
from agentdeck.settings import Settings
from agentdeck.store.memory import MemoryStore
from agentdeck.store.reads import StoreStats
from agentdeck.store.store import Store
from agentdeck.store.usage import UsageStore, report
from agentdeck.store.users import UserStore

logger = logging.getLogger(__name__)


class Deck:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        runner: Runner,
        hub: EventHub,
        targets: list[Target] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.runner = runner
        self.hub = hub
        self.steering = Steering(store, runner)
        self.memory: MemoryStore = runner.memory.records
        self.hooks = HookBridge(store, runner.governor, runner.memory)
        self.orchestration = Orchestrator(store, runner, settings)
        self.notifier = Notifier(settings, store, hub, targets or [])
        self.identity = Identity(UserStore(store), session_ttl=settings.session_ttl_seconds)
        self.usage_records = UsageStore(store)

    @classmethod
    async def open(cls, settings: Settings) -> Deck:
        settings.ensure_home()
        targets = load_targets(settings)  # a bad notification config stops the start
        store = Store.open(settings.db_path, batch_size=settings.event_batch_size)
        runner = Runner(store, settings, warm_pool=settings.warm_pool)
        hub = EventHub(store)
        await hub.start()
        return cls(settings, store, runner, hub, targets)

    async def close(self) -> None:
        """Stop every agent gracefully (then by force), flush the log."""
        try:
            await self.runner.shutdown(suspend=True)
            await self.runner.memory.drain()
        finally:
            self.orchestration.close()
            await self.notifier.stop()
            await self.hub.stop()
            await self.store.close()

    # -- start-up ----------------------------------------------------------------

    async def reconcile(self) -> list[Agent]:
        """Agents the store still has as live, after a crash or a restart.

        Leftover Claude Code processes are stopped; agents asked to survive
        restarts are resumed in their Claude session, the others are marked
        ``interrupted``. Agents supervised by a live ``agentdeck run`` elsewhere
        are left to it.
        """
        out = []
        live = [s for s in AgentState if s.is_live]
        found = await self.store.list_agents(states=live, limit=100_000, include_archived=True)
        # Agents a clean shutdown suspended mid-turn, to be carried on now.
        found += [
            a
            for a in await self.store.list_agents(
                states=[AgentState.INTERRUPTED], limit=100_000, include_archived=True
            )
            if a.extra.get("resume_at_start")
        ]
        for agent in found:
            if owned_elsewhere(agent):
                continue
            was_busy = agent.state != AgentState.IDLE
            agent = await reconcile_stale(self.store, agent, grace=self.settings.stop_grace_seconds)
            if agent.spec.resume_on_restart and not agent.session_id and was_busy:
                # Stopped before its Claude session began: start it afresh.
                try:
                    agent = (await self.runner.relaunch(agent.id, keep_alive=True)).agent
                except Exception as exc:  # noqa: BLE001 - one agent must not stop the daemon
                    logger.warning("could not restart agent %s: %s", agent.id, exc)
            elif agent.spec.resume_on_restart and agent.session_id:
                try:
                    # A turn that was cut short is continued; an idle agent
                    # just gets its process back, waiting for a message.
                    text = await self.orchestration.resume_text(agent) if was_busy else None
                    session = await self.runner.resume(
                        agent.id, text, keep_alive=True, idle=not was_busy
                    )
                    agent = session.agent
                except Exception as exc:  # noqa: BLE001 - one agent must not stop the daemon
                    logger.warning("could not resume agent %s: %s", agent.id, exc)
            out.append(agent)
        await self.runner.merges.recover()
        return out

    # -- usage ---------------------------------------------------------------------

    async def usage(self, *, since_seconds: float, bucket: Bucket, by: UsageGroup) -> UsageReport:
        """Cost and tokens over time, the fleet's daily cap, the budgets."""
        cap = self.runner.governor.profile_named().budgets.daily_usd
        return await report(
            self.usage_records,
            since_seconds=since_seconds,
            bucket=bucket,
            by=by,
            daily_cap_usd=cap,
            now=time.time(),
        )

    async def budget_warnings(self, since: float) -> list[dict[str, object]]:
        return await self.usage_records.warnings(since)

    # -- agents --------------------------------------------------------------------

    async def create_agent(
        self, spec: AgentSpec, *, keep_alive: bool = True, template: str | None = None
    ) -> Agent:
        """Start an agent; ``template`` names an agent template, seen from
        ``spec.project`` (or its cwd), whose settings the spec's own override."""
        if template:
            from agentdeck.core.templates import apply_template

            found = resolve_template(self.settings, template, spec.project or spec.cwd)
            spec = apply_template(found, spec)
        session = await self.runner.start(spec, keep_alive=keep_alive)
        return session.agent

    async def spawn(
        self,
        parent: str,
        prompt: str,
        *,
        template: str = "engineer",
        name: str | None = None,
        workspace: str | None = None,
    ) -> Agent:
        """A child of ``parent`` under the tree's rules (limits, budget, profile)."""
        agent = await self.get_agent(parent)
        return await self.orchestration.spawn(
            agent.id, prompt, template=template, name=name, workspace=workspace
        )

    async def get_agent(self, ref: str) -> Agent:
        session = self.runner.sessions.get(ref)
        if session is not None:
            return session.agent
        return self._fresh(await self.store.find_agent(ref))

    async def list_agents(
        self,
        *,
        states: list[AgentState] | None = None,
        text: str | None = None,
        include_archived: bool = False,
        limit: int = 100,
        offset: int = 0,
        parent: str | None = None,
        roots: bool = False,
    ) -> list[Agent]:
        agents = await self.store.list_agents(
            states=states,
            text=text,
            include_archived=include_archived,
            limit=limit,
            offset=offset,
            parent=parent,
            roots=roots,
        )
        return [self._fresh(a) for a in agents]

    def _fresh(self, agent: Agent) -> Agent:
        session = self.runner.sessions.get(agent.id)
        return session.agent if session is not None else agent

    async def children(self, ref: str) -> list[Agent]:
        agent = await self.store.find_agent(ref)
        return await self.orchestration.children(agent.id)

    async def descendants(self, root_ids: list[str], *, limit: int = 10_000) -> list[Agent]:
        return [self._fresh(a) for a in await self.store.descendants(root_ids, limit=limit)]

    async def send(self, ref: str, text: str) -> Agent:
        """A follow-up; a finished agent is resumed with it (kept alive)."""
        agent = await self.store.find_agent(ref)
        ensure_steerable(agent, "send a message to")
        if self.runner.live(agent.id) is None and not owned_elsewhere(agent):
            if agent.state.is_live:
                agent = await reconcile_stale(self.store, agent)
            session = await self.runner.resume(agent.id, text, keep_alive=True)
            return session.agent
        taken = await self.steering.send(agent.id, text)
        return taken if taken is not None else await self.get_agent(agent.id)

    async def interrupt(self, ref: str) -> Agent:
        return await self.steering.interrupt(ref)

    async def kill(self, ref: str, *, children: bool = True) -> Agent:
        """Stop the agent; with ``children`` (the default) its whole subtree too."""
        agent = await self.store.find_agent(ref)
        if not children:
            return await self.steering.kill(agent.id)
        return await self.orchestration.kill_tree(agent)

    async def resume(self, ref: str, text: str | None = None, *, fork: bool = False) -> Agent:
        session = await self.runner.resume(ref, text, fork=fork, keep_alive=True)
        return session.agent

    async def archive(self, ref: str, archived: bool = True) -> Agent:
        agent = await self.store.find_agent(ref)
        if archived and self.runner.live(agent.id) is not None:
            await self.runner.sessions[agent.id].close()
        await self.store.set_archived(agent.id, archived)
        await self.store.append(
            [
                Notice(
                    agent_id=agent.id,
                    ts=time.time(),
                    kind="archived" if archived else "restored",
                    message="archived" if archived else "restored from the archive",
                )
            ]
        )
        return await self.store.get_agent(agent.id)

    # -- approvals -----------------------------------------------------------------

    async def approvals(
        self,
        *,
        states: list[ApprovalState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        return await self.runner.governor.approvals.list_approvals(
            states=states, agent_id=agent_id, limit=limit
        )

    async def approval(self, ref: str) -> Approval:
        return await self.runner.governor.approvals.find(ref)

    async def answer(
        self,
        ref: str,
        decision: str,
        *,
        by: str,
        message: str | None = None,
        remember: GrantScope | None = None,
    ) -> Approval:
        """Answer a request. If no agent waits for it any more (its process died and
        it was resumed, or is still stopped), the answer is reported to the agent:
        now if it runs here, else when it is next resumed."""
        governor = self.runner.governor
        approval = await governor.approvals.find(ref)
        waited = governor.is_waiting(approval.id)
        answered = await governor.answer(
            approval.id, decision, by=by, message=message, remember=remember
        )
        if not waited:
            await self._report(answered)
        return answered

    async def _report(self, approval: Approval) -> None:
        verb = "approved" if approval.state.allows else "denied"
        note = (
            f"While you were stopped, your earlier request to use {approval.tool} "
            f"({approval.input}) was {verb}"
            + (f": {approval.message}" if approval.message else ".")
            + (" You may try it again." if approval.state.allows else "")
        )
        session = self.runner.live(approval.agent_id)
        if session is not None:
            await session.send(note)
            return
        await self.store.amend_extra(approval.agent_id, append={"reports": note})

    async def sweep(self) -> None:
        """Deny orphaned requests at their deadline; expire unanswered questions."""
        await self.runner.governor.expire_orphans()
        await self.orchestration.inbox.expire_orphans()

    # -- asks ------------------------------------------------------------------------

    async def asks(
        self,
        *,
        states: list[AskState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Ask]:
        return await self.orchestration.inbox.list_questions(
            states=states, agent_id=agent_id, limit=limit
        )

    async def ask(self, ref: str) -> Ask:
        return await self.orchestration.inbox.asks.find(ref)

    async def answer_ask(self, ref: str, answer: str, *, by: str) -> Ask:
        """A person answers a worker's question (whoever it was put to)."""
        return await self.orchestration.inbox.answer(ref, answer, by=by)

    # -- events and totals ---------------------------------------------------------

    async def events(
        self, *, after: int = 0, agent_id: str | None = None, limit: int = 1000
    ) -> list[StoredEvent]:
        return await self.store.read(after=after, agent_id=agent_id, limit=limit)

    async def stats(self) -> StoreStats:
        return await self.store.stats()
