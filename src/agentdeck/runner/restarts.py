"""A finished agent started again: resumed (or forked) from its Claude session,
or relaunched with its first prompt when it never had one.
"""

from __future__ import annotations

import logging
import os
import time

from agentdeck.core.agent import PROMPT_REDACTED, Agent, AgentSource, AgentState
from agentdeck.core.events import ErrorOccurred, Event, spawned_events
from agentdeck.core.ids import new_agent_id
from agentdeck.core.lifecycle import REFUSALS, transition
from agentdeck.errors import InvalidState, SecretNotKept, UsageError
from agentdeck.runner.creation import AgentCreation
from agentdeck.runner.scripted import scenario_of
from agentdeck.runner.session import AgentSession

logger = logging.getLogger(__name__)


RESUME_PROMPT = "Continue where you left off."
TRANSIENT_EXTRA = ("resume_at_start", "waiting_for", "asking")


def _restarting(agent: Agent, reason: str, now: float) -> tuple[Agent, list[Event]]:
    """The agent back to ``starting`` under this process, and the event that says
    so. What marked it while it was stopped (waiting, asking, to be carried on)
    is over once it runs again."""
    extra = {k: v for k, v in agent.extra.items() if k not in TRANSIENT_EXTRA}
    moved = transition(agent, AgentState.STARTING, ts=now, reason=reason)
    if moved.refused:  # the callers start only a finished agent: never written
        logger.warning(REFUSALS.note(agent, AgentState.STARTING))
        raise InvalidState(agent.id, agent.state, reason)
    restarted = moved.agent.with_changes(
        updated_at=now, owner_pid=os.getpid(), last_error=None, extra=extra
    )
    return restarted, list(moved.events)


class AgentRestarts(AgentCreation):
    """Resumes, forks and relaunches agents that have ended."""

    async def resume(
        self,
        ref: str,
        text: str | None = None,
        *,
        fork: bool = False,
        keep_alive: bool = False,
        idle: bool = False,
    ) -> AgentSession:
        """Continue a finished agent's Claude session in a new process (or fork it).

        With ``idle`` (and ``keep_alive``) nothing is said: the process waits for
        a message; otherwise ``text`` (default: a request to continue) is sent.
        """
        async with self._creation():
            return await self._resume(ref, text, fork=fork, keep_alive=keep_alive, idle=idle)

    async def _resume(
        self, ref: str, text: str | None, *, fork: bool, keep_alive: bool, idle: bool
    ) -> AgentSession:
        agent = await self.store.find_agent(ref)
        if agent.source is AgentSource.EXTERNAL and not fork:
            raise UsageError(
                f"{agent.id} is a hand-started Claude Code session (source external): "
                "agentdeck cannot resume it",
                hint=f"resume it yourself (claude --resume {agent.session_id}) "
                "or fork it with agentdeck resume --fork",
            )
        if self.live(agent.id) is not None or (agent.state.is_live and not fork):
            raise InvalidState(agent.id, agent.state, "resume a live agent (send it a message)")
        if not agent.session_id:
            raise InvalidState(agent.id, agent.state, "resume: it never started a Claude session")
        self.check_capacity(agent.id)
        session_id = agent.session_id
        scenario = scenario_of(agent.spec.scenario)
        base_url = await self._model_url(scenario) if scenario else None
        now = time.time()
        events: list[Event]
        if fork:
            parent = agent
            agent = parent.with_changes(
                id=new_agent_id(),
                name=f"{parent.name}-fork",
                state=AgentState.STARTING,
                created_at=now,
                updated_at=now,
                session_id=None,
                cost_usd=0.0,
                input_tokens=0,
                output_tokens=0,
                turns=0,
                last_error=None,
                pid=None,
                owner_pid=os.getpid(),
                parent_id=None,  # a fork is a new agent of whoever asked for it
                extra={"forked_from": parent.id},
            )
            events = spawned_events(agent, reason=f"forked from {parent.id}")
        else:
            agent, events = _restarting(agent, "resume", now)
        reports = list(agent.extra.get("reports", []))
        if reports and not fork:
            # Answers that came while it was stopped: tell it first.
            agent = agent.with_changes(
                extra={k: v for k, v in agent.extra.items() if k != "reports"}
            )
            text = "\n".join([*reports, text or RESUME_PROMPT])
        await self.store.record(events, agent)
        return await self._launch(
            agent,
            None if idle and keep_alive and text is None else text or RESUME_PROMPT,
            base_url=base_url,
            keep_alive=keep_alive,
            resume=session_id,
            fork=fork,
        )

    async def relaunch(self, ref: str, *, keep_alive: bool = False) -> AgentSession:
        """A new process for an agent that was stopped before it had a Claude
        session (nothing to resume): it is given its first prompt again."""
        async with self._creation():
            return await self._relaunch(ref, keep_alive=keep_alive)

    async def _relaunch(self, ref: str, *, keep_alive: bool) -> AgentSession:
        agent = await self.store.find_agent(ref)
        if agent.session_id or agent.state.is_live or agent.source is not AgentSource.AGENTDECK:
            raise InvalidState(agent.id, agent.state, "start it afresh")
        prompt = self._prompts.get(agent.id)
        if prompt is None and agent.extra.get(PROMPT_REDACTED):
            # Never the redacted copy to the model as if it were the task: refused,
            # and said where the agent is looked at.
            refused = SecretNotKept(
                f"agent {agent.id}'s first prompt held a secret, which was not kept "
                "(only its redacted copy is stored, and this process did not start it): "
                "it cannot be given again",
                hint="start a new agent with the prompt",
            )
            now = time.time()
            said = f"{refused.message} ({refused.hint})"
            await self.store.record(
                [ErrorOccurred(agent_id=agent.id, ts=now, kind="prompt_not_kept", message=said)],
                agent.with_changes(last_error=said, updated_at=now),
            )
            raise refused
        self.check_capacity(agent.id)
        scenario = scenario_of(agent.spec.scenario)
        base_url = await self._model_url(scenario) if scenario else None
        agent, events = _restarting(agent, "restart", time.time())
        await self.store.record(events, agent)
        return await self._launch(
            agent, prompt or agent.spec.prompt, base_url=base_url, keep_alive=keep_alive
        )
