"""The Orchestrator: the agent tree, run on the runner.

An orchestrator agent spawns children (``spawn``), lists them, reads their
transcripts, sends them follow-ups, interrupts or kills them, and waits for them
(``waits.py``); its workers ask it questions and send it notes (``inbox.py``).
Every operation takes the calling agent's id and acts only on that agent's own
children, within the tree's limits (``core.tree``).

It is also the runner's ``SessionExtension``: each agent's Claude Code process
gets the ``deck`` MCP server (``tools.py``) with the tools its role allows, a
place in its tree's budget, and the notes waiting for it with its next message.
It follows the event log to learn when a child's state changes (to wake a
waiting parent) and when a parent is done (its idle children are closed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState, external_agent
from agentdeck.core.events import EventType, Notice, StoredEvent, spawned_events
from agentdeck.core.guardrails import SharedBudget
from agentdeck.core.ids import new_agent_id
from agentdeck.core.policy_inherit import looser
from agentdeck.core.templates import Template, apply_template
from agentdeck.core.transcript import compact
from agentdeck.core.tree import (
    SpawnRefused,
    TreeLimits,
    carve,
    check_spawn,
    child_name,
    resolve_ref,
)
from agentdeck.errors import (
    AgentdeckError,
    InvalidState,
    NotFound,
    PolicyError,
    UsageError,
    WorktreeError,
)
from agentdeck.orchestration import texts
from agentdeck.orchestration.budgets import TreeBudgets
from agentdeck.orchestration.host import ToolError
from agentdeck.orchestration.inbox import Inbox
from agentdeck.orchestration.person_asks import ask_person
from agentdeck.orchestration.templates import resolve
from agentdeck.orchestration.waits import Waits
from agentdeck.runner.runner import Runner
from agentdeck.runner.steering import Steering, owned_elsewhere, reconcile_stale
from agentdeck.settings import Settings
from agentdeck.store.store import Store

if TYPE_CHECKING:
    from agentdeck.core.ask_choices import ChoiceQuestion
    from agentdeck.core.asks import Ask
    from agentdeck.runner.session import AgentSession

logger = logging.getLogger(__name__)

WORKSPACES = ("new", "shared", "worktree")
TRANSCRIPT_MAX = 200


class Orchestrator:
    def __init__(self, store: Store, runner: Runner, settings: Settings) -> None:
        self.store = store
        self.runner = runner
        self.settings = settings
        limits = (settings.max_depth, settings.max_children, settings.max_live_agents)
        self.limits = TreeLimits(*limits)
        self.steering = Steering(store, runner)
        self.inbox = Inbox(self)
        self.waits = Waits(self)
        self.budgets = TreeBudgets(store, runner, self.agent)
        self._spawn_lock = asyncio.Lock()
        self._external_lock = asyncio.Lock()
        self._wake: dict[str, set[asyncio.Event]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop = asyncio.get_running_loop()
        self._unsubscribe: Callable[[], None] | None = None
        self._courier: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Follow the store's writes (wake-ups, answers), carry answers to live workers,
        serve the runner's sessions: what ``daemon.compose`` starts once built."""
        if self._courier is not None:
            return
        self._unsubscribe = self.store.subscribe(self._from_writer)
        self._courier = asyncio.create_task(self._deliver_answers(), name="orchestration-courier")
        self.runner.attach(self)

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._courier is not None:
            self._courier.cancel()
        for task in list(self._tasks):
            task.cancel()
        self.budgets.close()

    async def _deliver_answers(self, every: float = 1.0) -> None:
        """Answers nobody here waits for reach their live workers: given in another
        process (``agentdeck answer`` beside an ``agentdeck run``), or after the
        worker stopped waiting (one call's cap)."""
        while True:
            await asyncio.sleep(every)
            try:
                await self.inbox.deliver_late()
            except Exception:
                logger.exception("delivering answers failed")

    # -- the runner's extension ------------------------------------------------------

    def mcp_servers(self, agent: Agent) -> dict[str, Any]:
        from agentdeck.orchestration.tools import deck_server

        return {"deck": deck_server(self, agent)}

    def env(self, agent: Agent) -> dict[str, str]:
        return {}

    async def budget(self, agent: Agent) -> SharedBudget:
        # Called as its session starts, before its sandbox is set up: a child's
        # profile is met with its ancestors' from here on (``Governor.inherit``).
        await self.runner.governor.inherit(agent)
        return await self.budgets.for_session(agent)

    async def before_send(self, agent: Agent, text: str) -> str:
        return await self.inbox.with_notes(agent, text)

    async def ask_user(self, agent: Agent, questions: tuple[ChoiceQuestion, ...]) -> Ask:
        return await ask_person(self.inbox, agent, questions)

    # -- agents ----------------------------------------------------------------------

    async def agent(self, agent_id: str) -> Agent:
        session = self.runner.sessions.get(agent_id)
        if session is not None:
            return session.agent
        return await self.store.get_agent(agent_id)

    def session(self, agent_id: str) -> AgentSession | None:
        return self.runner.live(agent_id)

    async def children(self, parent_id: str) -> list[Agent]:
        found = await self.store.children([parent_id])
        return [self._fresh(a) for a in found]

    def _fresh(self, agent: Agent) -> Agent:
        session = self.runner.sessions.get(agent.id)
        return session.agent if session is not None else agent

    async def child(self, parent_id: str, ref: str) -> Agent:
        """One of the caller's children by id, id prefix or name."""
        children = await self.children(parent_id)
        found = resolve_ref(ref, children)
        if found is None:
            names = ", ".join(c.name for c in children) or "none"
            raise ToolError(f"you have no child agent {ref!r} (your children: {names})")
        return found

    async def depth(self, agent: Agent) -> int:
        return len(await self.runner.governor.ancestors(agent))

    # -- spawning ----------------------------------------------------------------------

    async def spawn(
        self,
        parent_id: str,
        prompt: str,
        *,
        template: str = "engineer",
        name: str | None = None,
        workspace: str | None = None,
        budget_usd: float | None = None,
    ) -> Agent:
        """A new child of ``parent_id`` from ``template``, started in the background."""
        if not prompt.strip():
            raise ToolError("spawn_agent needs a prompt: the task for the new agent")
        if workspace is not None and workspace not in WORKSPACES:
            raise ToolError(f"workspace must be one of {', '.join(WORKSPACES)}, not {workspace!r}")
        if budget_usd is not None and not (math.isfinite(budget_usd) and budget_usd > 0):
            raise ToolError(f"budget_usd must be a positive number of dollars, not {budget_usd!r}")
        parent = await self.agent(parent_id)
        await self.runner.governor.inherit(parent)
        # The limits hold across concurrent spawns; the budget across hosts too.
        async with self._spawn_lock, self.budgets.carving(parent) as node:
            siblings = await self.children(parent.id)
            try:
                check_spawn(
                    self.limits,
                    parent_depth=await self.depth(parent),
                    live_children=sum(1 for c in siblings if c.state.is_live),
                    live_total=self.runner.live_count(),
                )
                found = resolve(self.settings, template, parent.spec.project or parent.cwd)
                await self._not_looser(parent, found)
                chosen = workspace or found.workspace or "new"
                budget = carve(
                    budget_usd if budget_usd is not None else found.budget_usd, node.available()
                )
                spec = apply_template(
                    found,
                    AgentSpec(
                        prompt=prompt,
                        name=child_name(name, found.name, [c.name for c in siblings]),
                        # A worktree is made from the parent's repository (its branch).
                        cwd=parent.cwd if chosen in ("shared", "worktree") else None,
                        model=None if found.model else parent.spec.model,
                        budget_usd=budget,
                        scenario=parent.spec.scenario,
                        resume_on_restart=parent.spec.resume_on_restart,
                        profile=found.profile or parent.spec.profile,
                        workspace=chosen,
                        project=parent.spec.project or parent.cwd,
                        owner=parent.spec.owner,  # the parent's user pays for it
                    ),
                )
            except SpawnRefused as exc:
                raise ToolError(str(exc)) from None
            except NotFound as exc:
                raise ToolError(f"{exc.message} ({exc.hint})") from None
            try:
                # Started here, or queued for a runner host that fits (maybe another).
                child = await self.runner.place(spec, parent_id=parent.id, background=True)
            except WorktreeError as exc:  # not a repository, a dirty base…: the model can act
                raise ToolError(str(exc)) from None
            await self.budgets.given(child.id, budget, node)
        logger.info("agent %s spawned %s (%s)", parent.id, child.id, found.name)
        return child

    async def _not_looser(self, parent: Agent, found: Template) -> None:
        """A template naming a profile that gives more than its parent's (its
        sandbox, network, default, budgets…) is refused: a child never gets more
        than its parent. One naming none inherits the parent's."""
        if found.profile is None:
            return
        governor = self.runner.governor
        await governor.inherit(parent)
        mine = governor.profile_for(parent, tools=False, deck=True)
        try:
            own = governor.profile_named(found.profile)
        except PolicyError as exc:
            raise ToolError(
                f"cannot spawn: template {found.name}'s profile cannot be used: {exc.problem}"
            ) from None
        reasons = looser(own, mine)
        if reasons:
            raise ToolError(
                f"cannot spawn: template {found.name} names profile {own.name}, which gives "
                f"more than yours ({mine.name}): {'; '.join(reasons)}. A child never gets "
                "more than its parent: use a template whose profile is as strict as yours, "
                "or one that names none (it then runs under yours)."
            )

    # -- reading and steering children ---------------------------------------------------

    async def transcript(self, parent_id: str, ref: str, *, since: int = 0, limit: int = 50) -> str:
        child = await self.child(parent_id, ref)
        limit = max(1, min(limit, TRANSCRIPT_MAX))
        events = await self.store.read(agent_id=child.id, after=max(0, since), limit=limit + 1)
        more = len(events) > limit
        events = events[:limit]
        lines = compact(events)
        last = events[-1].id if events else since
        head = f"Transcript of {texts.who(child)}, state {child.state}, events after #{since}:"
        tail = (
            f"More events follow: read_transcript({child.name!r}, since={last})."
            if more
            else f"That is everything so far; continue later with since={last}."
        )
        return "\n".join([head, *(lines or ["(no events)"]), tail])

    async def send_to(self, parent_id: str, ref: str, text: str) -> Agent:
        """A follow-up to a child: queued if it is busy, resumed if it finished."""
        child = await self.child(parent_id, ref)
        parent = await self.agent(parent_id)
        return await self.deliver(child, f"Message from your orchestrator {parent.name}:\n{text}")

    async def deliver(self, agent: Agent, text: str) -> Agent:
        """Say ``text`` to an agent as its next user message, wherever it is."""
        session = self.runner.live(agent.id)
        if session is not None:
            await session.send(text)
            return session.agent
        if owned_elsewhere(agent):
            taken = await self.steering.send(agent.id, text)
            return taken if taken is not None else await self.agent(agent.id)
        if agent.source is AgentSource.EXTERNAL:
            raise ToolError(f"{agent.name} is a hand-started session: agentdeck cannot message it")
        if agent.state == AgentState.KILLED:
            raise ToolError(f"{agent.name} was killed: it takes no more messages")
        if agent.state.is_live:
            agent = await reconcile_stale(self.store, agent)
        resumed = await self.runner.resume(agent.id, text, keep_alive=True)
        return resumed.agent

    async def interrupt(self, parent_id: str, ref: str) -> Agent:
        child = await self.child(parent_id, ref)
        try:
            return await self.steering.interrupt(child.id)
        except InvalidState as exc:
            raise ToolError(f"{child.name} is {child.state}: nothing to interrupt") from exc

    async def kill(self, parent_id: str, ref: str) -> Agent:
        child = await self.child(parent_id, ref)
        killed = await self.kill_tree(child)
        return killed

    async def kill_tree(self, agent: Agent, *, children: bool = True) -> Agent:
        """Kill the agent and (unless told otherwise) every live agent below it,
        deepest first, so no child outlives its parent's kill to run unwatched."""
        killed = 0
        if children:
            below = await self.store.descendants([agent.id])
            for descendant in reversed(below):
                fresh = self._fresh(descendant)
                if fresh.state.is_live and fresh.source is AgentSource.AGENTDECK:
                    try:
                        await self.steering.kill(fresh.id)
                        killed += 1
                    except (AgentdeckError, TimeoutError) as exc:
                        logger.warning(
                            "could not kill %s of %s's tree: %s", fresh.id, agent.id, exc
                        )
        fresh = self._fresh(agent)
        if killed and not fresh.state.is_live:
            return fresh  # a finished parent whose children were still at work
        return await self.steering.kill(agent.id)

    # -- following the log ------------------------------------------------------------------

    def wake(self, agent_id: str) -> None:
        """Something a waiting ``agent_id`` cares about happened: its waits look again."""
        for event in self._wake.get(agent_id, ()):
            event.set()

    def waiter(self, agent_id: str) -> asyncio.Event:
        """A wake event of one wait of ``agent_id`` (``unwait`` when it ends)."""
        event = asyncio.Event()
        self._wake.setdefault(agent_id, set()).add(event)
        return event

    def unwait(self, agent_id: str, event: asyncio.Event) -> bool:
        """The wait is over; True when it was the agent's last one."""
        events = self._wake.get(agent_id, set())
        events.discard(event)
        if not events:
            self._wake.pop(agent_id, None)
            return True
        return False

    def _from_writer(self, events: Sequence[StoredEvent]) -> None:  # the writer thread
        changes = [e for e in events if e.type == EventType.STATE_CHANGED]
        if changes:
            with contextlib.suppress(RuntimeError):  # the loop is closing
                self._loop.call_soon_threadsafe(self._on_state_changes, changes)

    def _on_state_changes(self, changes: list[StoredEvent]) -> None:
        for event in changes:
            agent_id = event.agent_id
            new = AgentState(str(event.data.get("new")))
            self.budgets.set_live(agent_id, new.is_live)
            session = self.runner.sessions.get(agent_id)
            agent = session.agent if session is not None else None
            if agent is not None and agent.parent_id:
                self.wake(agent.parent_id)
            if new == AgentState.IDLE:
                self._later(self.inbox.on_idle(agent_id))
            if new.is_final:
                self._later(self._orphans(agent_id))

    def _later(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning("orchestration follow-up failed: %s", task.exception())

    async def _orphans(self, parent_id: str) -> None:
        """A parent is done: its children that are idle are closed (a child busy
        with a turn finishes it first, then is closed when it goes idle)."""
        for session in list(self.runner.sessions.values()):
            agent = session.agent
            idle = agent.state == AgentState.IDLE and not session.finished.is_set()
            if agent.parent_id == parent_id and idle:
                await session.close()

    async def close_if_orphaned(self, agent: Agent) -> bool:
        """A child whose parent is over (its process ended, or its hand-started
        session did) is closed once it is idle: nobody waits for it any more."""
        if not agent.parent_id:
            return False
        try:
            parent = await self.agent(agent.parent_id)
        except NotFound:
            return False
        if parent.state.is_final:
            session = self.runner.live(agent.id)
            if session is not None:
                await session.close()
                return True
        return False

    # -- restarts -----------------------------------------------------------------------------

    async def resume_text(self, agent: Agent) -> str | None:
        """What an agent resumed after a restart is told, if it was waiting."""
        waiting = agent.extra.get("waiting_for")
        if waiting:
            return texts.restarted_waiting([str(w) for w in waiting])
        asking = agent.extra.get("asking")
        if asking:
            try:
                ask = await self.inbox.asks.get(str(asking))
            except NotFound:
                return None
            if ask.state.is_open:
                return texts.restarted_asking(ask.id)
        return None  # an answer that came meanwhile is among its reports

    async def note(self, agent: Agent, message: str) -> None:
        await self.store.append(
            [Notice(agent_id=agent.id, ts=time.time(), kind="orchestration", message=message)]
        )

    async def external_parent(self, session_id: str, project: str, pid: int | None) -> Agent:
        """The agent of a hand-started Claude Code session that orchestrates through
        ``agentdeck mcp --orchestrate`` (the same one its hooks report to, if any)."""
        if not session_id:
            raise UsageError("a session id is needed to orchestrate from a Claude Code session")
        async with self._external_lock:  # one agent per session, however many ask at once
            found = await self.store.agent_for_session(session_id, AgentSource.EXTERNAL)
            if found is not None:
                return found
            now = time.time()
            agent = external_agent(
                new_agent_id(now), session_id, project, now=now, state=AgentState.RUNNING, pid=pid
            )
            reason = "a hand-started Claude Code session orchestrates through agentdeck mcp"
            await self.store.record(spawned_events(agent, reason), agent)
            return agent
