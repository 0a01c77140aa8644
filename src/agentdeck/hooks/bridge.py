"""The daemon's side of the hook client: hand-started sessions report in.

Each Claude Code session that runs agentdeck's hooks becomes an agent with
source ``external``: its prompts, tool calls and results land in the event log
like those of agents run by agentdeck, so the board shows them live. PreToolUse
is answered by the same policy engine (deny → Claude Code does not run the
tool; ask → Claude Code's own prompt). Tool results become memory
observations, a stop becomes a session summary, and a new session is told what
earlier sessions in its project learned.

The daemon never stops or steers these processes: their terminal owns them.
What the log keeps of them is scrubbed like every event (``Store.record``;
secrets redacted, ``<private>`` dropped; a long output before it is cut), and so
is what the agent row keeps; the policy judges the input as Claude Code sent it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, replace
from typing import Any

from agentdeck.core.agent import Agent, AgentSource, AgentState, external_agent
from agentdeck.core.approvals import Approval
from agentdeck.core.event_scrub import scrubbed_head
from agentdeck.core.events import (
    AssistantText,
    Event,
    HookReceived,
    PermissionRequested,
    PermissionResolved,
    ToolCalled,
    ToolReturned,
    UserMessageSent,
    spawned_events,
)
from agentdeck.core.ids import new_agent_id
from agentdeck.core.lifecycle import REFUSALS, transition
from agentdeck.core.memory import output_text
from agentdeck.core.policy import Decision
from agentdeck.core.redact import scrub, scrub_value
from agentdeck.core.summary import short
from agentdeck.governance.governor import Governor
from agentdeck.governance.hand import HandGovernance
from agentdeck.hooks.payload import MAX_NESTING, mended, object_of, pid_of, shape, text_of
from agentdeck.hooks.protocol import HookReply, HookRequest, Pending
from agentdeck.memory.projects import directory_of, project_of
from agentdeck.memory.service import Memory
from agentdeck.store.store import Store

logger = logging.getLogger(__name__)

MAX_LOCKS = 1000  # per-session locks kept before idle ones are forgotten
# Sessions given memory at their start; a resumed session already has its history.
CONTEXT_SOURCES = ("startup", "clear", "compact")


def decision_output(event: str, decision: str, reason: str) -> str:
    return json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": decision,
                "permissionDecisionReason": reason,
            }
        }
    )


def context_output(event: str, context: str) -> str:
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    )


@dataclass(frozen=True)
class _Asking:
    """A call put to the approval inbox, whose answer the hook waits for."""

    approval: Approval
    use_id: str
    tool_input: dict[str, Any]


class HookBridge:
    def __init__(self, store: Store, governor: Governor, memory: Memory) -> None:
        self.store = store
        self.governor = governor
        self.hand = HandGovernance(governor)
        self.memory = memory
        self._agents: dict[str, Agent] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def handle(self, request: HookRequest) -> HookReply:
        payload, env = request.event, request.env
        depth, lone_surrogates = shape(payload)
        lone_surrogates = lone_surrogates or shape(env)[1]
        if depth > MAX_NESTING:
            logger.warning("hook payload nested %d+ levels deep: not read", depth)
            return HookReply.fall_back(f"the hook payload nests deeper than {MAX_NESTING} levels")
        if lone_surrogates:  # JSON can carry them (a string cut mid-pair); UTF-8 cannot
            payload, env = mended(payload), mended(env)
        name = text_of(payload, "hook_event_name")
        session_id = text_of(payload, "session_id")
        if not name or not session_id:
            missing = "hook_event_name" if not name else "session_id"
            return HookReply(stderr=f"agentdeck: the hook payload has no {missing}; ignored")
        where = env.get("CLAUDE_PROJECT_DIR") or text_of(payload, "cwd")
        # The board shows where it runs; memory is the repository's (a linked worktree's too).
        directory, project = directory_of(where), project_of(where)
        if len(self._locks) > MAX_LOCKS:
            # Forget idle sessions' locks; one still held or waited on is kept.
            self._locks = {k: v for k, v in self._locks.items() if v.locked()}
            self._agents = {k: v for k, v in self._agents.items() if k in self._locks}
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            agent = await self._agent(session_id, directory, payload, env, request.owner)
            if request.owner is not None and agent.spec.owner != request.owner:
                logger.warning(
                    "hook event for %s refused: the session is not the token's", agent.id
                )
                return HookReply.fall_back("this session is reported by another user")
            handler = getattr(self, "_on_" + name, None)
            if handler is None:
                return await self._other(agent, name, payload)
            reply: HookReply | _Asking = await handler(agent, project, payload)
        if isinstance(reply, _Asking):
            return await self._asked(session_id, agent, reply, request.pending)
        return reply

    # -- the session's agent ---------------------------------------------------------

    async def _agent(
        self,
        session_id: str,
        directory: str,
        payload: dict[str, Any],
        env: dict[str, str],
        owner: str | None = None,
    ) -> Agent:
        agent = self._agents.get(session_id)
        if agent is None:
            agent = await self.store.agent_for_session(session_id, AgentSource.EXTERNAL)
        pid = pid_of(env.get("CLAUDE_PID"))
        if agent is None:
            now = time.time()
            agent = external_agent(
                new_agent_id(now),
                session_id,
                directory,
                now=now,
                state=AgentState.STARTING,
                pid=pid,
                transcript_path=text_of(payload, "transcript_path"),
            )
            if owner is not None:
                agent = agent.with_changes(spec=replace(agent.spec, owner=owner))
            reason = "a hand-started Claude Code session reported in"
            await self.store.record(spawned_events(agent, reason), agent)
        else:
            if pid is not None and agent.pid != pid:
                agent = agent.with_changes(pid=pid)
            if not agent.cwd and directory:  # the first payload had no directory
                agent = agent.with_changes(cwd=directory)
        self._agents[session_id] = agent
        return agent

    async def _save(
        self,
        agent: Agent,
        events: list[Event],
        *,
        state: AgentState | None = None,
        reason: str | None = None,
        **changes: Any,
    ) -> Agent:
        now = time.time()
        out = list(events)
        if state is not None:
            for step, why in _steps(agent.state, state, reason):
                moved = transition(agent, step, ts=now, reason=why)
                if moved.refused:  # never written: the state the log has stays
                    logger.warning(REFUSALS.note(agent, step))
                    break
                agent = moved.agent
                out += moved.events
        updated = agent.with_changes(updated_at=now, **changes)
        await self.store.record(out, updated)
        if updated.session_id:
            self._agents[updated.session_id] = updated
            if updated.state.is_final:
                self._agents.pop(updated.session_id, None)
        return updated

    # -- events ----------------------------------------------------------------------

    async def _on_SessionStart(
        self, agent: Agent, project: str, payload: dict[str, Any]
    ) -> HookReply:
        source = text_of(payload, "source") or "startup"
        await self._save(agent, [], state=AgentState.IDLE, reason=f"session {source}")
        if source not in CONTEXT_SOURCES:
            return HookReply()
        context = await self.memory.context(project)
        return HookReply(stdout=context_output("SessionStart", context) if context else "")

    async def _on_UserPromptSubmit(
        self, agent: Agent, project: str, payload: dict[str, Any]
    ) -> HookReply:
        prompt = text_of(payload, "prompt")
        extra = agent.extra
        if not extra.get("request"):
            extra = {**extra, "request": scrub(prompt)}
        event = UserMessageSent(agent_id=agent.id, ts=time.time(), text=prompt)
        await self._save(agent, [event], state=AgentState.RUNNING, extra=extra)
        return HookReply()

    async def _on_PreToolUse(
        self, agent: Agent, project: str, payload: dict[str, Any]
    ) -> HookReply | _Asking:
        tool = text_of(payload, "tool_name") or "unknown"
        tool_input = object_of(payload.get("tool_input"))
        use_id = text_of(payload, "tool_use_id") or f"hook-{time.time_ns()}"
        now = time.time()
        called = ToolCalled(
            agent_id=agent.id, ts=now, tool_use_id=use_id, tool=tool, input=tool_input
        )
        agent = await self._save(
            agent, [called], state=AgentState.RUNNING, current_tool=short(tool, 60)
        )
        if not agent.cwd:  # the policy judges paths against the workspace
            return HookReply.fall_back("the session reported no working directory")
        verdict = await self.hand.judge(agent, tool, tool_input)
        if verdict is None:  # no deny or ask rule: Claude Code's own rules decide
            return HookReply()
        if verdict.decision is Decision.DENY:
            await self._resolved(agent, use_id, "deny", verdict.reason, verdict.rule, "policy")
        elif verdict.decision is Decision.ASK:
            if not self.hand.askable(tool_input):
                why = f"{verdict.reason}; the call is too large to put in the approval inbox"
                await self._resolved(agent, use_id, "ask", why, verdict.rule, "policy")
                return HookReply(stdout=decision_output("PreToolUse", "ask", f"agentdeck: {why}"))
            approval = await self.hand.request(agent, tool, tool_input, use_id, verdict)
            requested = PermissionRequested(
                agent_id=agent.id,
                ts=time.time(),
                request_id=approval.id,
                tool=tool,
                input=tool_input,
                reason=verdict.reason,
            )
            await self._save(
                agent,
                [requested],
                state=AgentState.AWAITING_PERMISSION,
                reason=short(f"approval {approval.id}: {scrub(verdict.reason)}", 200),
            )
            return _Asking(approval, use_id, tool_input)
        reason = f"agentdeck: {verdict.reason}"
        return HookReply(stdout=decision_output("PreToolUse", str(verdict.decision), reason))

    async def _asked(
        self, session_id: str, agent: Agent, asking: _Asking, pending: Pending | None
    ) -> HookReply:
        """Wait for the answer outside the session's lock (its other calls go on)."""
        approval = asking.approval
        if pending is not None:
            try:
                await pending(max(approval.expires_at - time.time(), 0.1))
            except (ConnectionError, TimeoutError):
                await self.hand.cancel(agent, approval, asking.tool_input)  # nobody waits
                return HookReply()
        answer = await self.hand.wait(agent, approval, asking.tool_input)
        async with self._locks.setdefault(session_id, asyncio.Lock()):
            # As it is now (other calls went on meanwhile), from the store if forgotten.
            agent = await self._agent(session_id, agent.cwd, {}, {})
            await self._resolved(
                agent,
                asking.use_id,
                answer.decision,
                answer.reason,
                approval.rule,
                answer.by,
                request_id=approval.id,
            )
        reason = f"agentdeck: {answer.reason}"
        return HookReply(stdout=decision_output("PreToolUse", answer.decision, reason))

    async def _resolved(
        self,
        agent: Agent,
        use_id: str,
        decision: str,
        reason: str,
        rule: str | None,
        by: str,
        *,
        request_id: str | None = None,
    ) -> None:
        """The decision on the board, in ``logs`` and the API, as for agents agentdeck
        runs; a denied call also ends there (Claude Code reports no result for it)."""
        now = time.time()
        events: list[Event] = [
            PermissionResolved(
                agent_id=agent.id,
                ts=now,
                request_id=request_id or use_id,
                decision=decision,
                reason=reason,
                rule=rule,
                by=by,
            )
        ]
        if decision == "deny":
            events.append(
                ToolReturned(
                    agent_id=agent.id,
                    ts=now,
                    tool_use_id=use_id,
                    output=f"denied by agentdeck: {reason}",
                    is_error=True,
                )
            )
        state = AgentState.RUNNING if agent.state is AgentState.AWAITING_PERMISSION else None
        changes: dict[str, Any] = {"current_tool": None} if decision == "deny" else {}
        await self._save(agent, events, state=state, reason=f"permission {decision}", **changes)

    async def _on_PostToolUse(
        self, agent: Agent, project: str, payload: dict[str, Any]
    ) -> HookReply:
        return await self._returned(agent, project, payload, is_error=False)

    async def _on_PostToolUseFailure(
        self, agent: Agent, project: str, payload: dict[str, Any]
    ) -> HookReply:
        return await self._returned(agent, project, payload, is_error=True)

    async def _returned(
        self, agent: Agent, project: str, payload: dict[str, Any], *, is_error: bool
    ) -> HookReply:
        tool = text_of(payload, "tool_name") or "unknown"
        tool_input = object_of(payload.get("tool_input"))
        response = payload.get("error") if is_error else payload.get("tool_response")
        text = output_text(response)
        limit = self.memory.settings.tool_output_limit
        size = len(text.encode("utf-8", "replace"))
        returned = ToolReturned(
            agent_id=agent.id,
            ts=time.time(),
            tool_use_id=text_of(payload, "tool_use_id") or "-",
            output=scrubbed_head(text, limit),
            is_error=is_error,
            size=size,
            truncated=size > limit,
        )
        await self._save(agent, [returned], state=AgentState.RUNNING, current_tool=None)
        await self.memory.observe(
            agent_id=agent.id,
            session_id=agent.session_id or "",
            project=project,
            tool=tool,
            tool_input=tool_input,
            output=response,
            is_error=is_error,
        )
        return HookReply()

    async def _on_Stop(self, agent: Agent, project: str, payload: dict[str, Any]) -> HookReply:
        message = text_of(payload, "last_assistant_message")
        final = scrub(message) or agent.extra.get("final_message")
        events: list[Event] = []
        if message:
            events.append(AssistantText(agent_id=agent.id, ts=time.time(), text=message))
        agent = await self._save(
            agent,
            events,
            state=AgentState.IDLE,
            reason="turn done",
            turns=agent.turns + 1,
            current_tool=None,
            extra={**agent.extra, "final_message": final},
        )
        await self._summarize(agent, project)
        return HookReply()

    async def _on_SessionEnd(
        self, agent: Agent, project: str, payload: dict[str, Any]
    ) -> HookReply:
        await self._summarize(agent, project, final=True)
        why = text_of(payload, "reason") or "other"
        await self._save(
            agent, [], state=AgentState.DONE, reason=f"session ended ({why})", current_tool=None
        )
        return HookReply()

    async def _on_Notification(
        self, agent: Agent, project: str, payload: dict[str, Any]
    ) -> HookReply:
        """Fires in a terminal only: Claude Code waits for its user (a permission
        prompt, or idle at the prompt). The board shows who is waited for."""
        await self._other(agent, "Notification", payload)
        kind = text_of(payload, "notification_type")
        message = text_of(payload, "message")
        if kind == "permission_prompt" or (not kind and "permission" in message.lower()):
            await self._save(
                self._agents.get(agent.session_id or "", agent),
                [],
                state=AgentState.AWAITING_PERMISSION,
                reason=short(message or "Claude Code asks for permission", 200),
            )
        return HookReply()

    async def _summarize(self, agent: Agent, project: str, *, final: bool = False) -> None:
        await self.memory.summarize(
            agent_id=agent.id,
            session_id=agent.session_id or "",
            project=project,
            final_message=str(agent.extra.get("final_message") or ""),
            request=str(agent.extra.get("request") or ""),
            final=final,
        )

    async def _other(self, agent: Agent, name: str, payload: dict[str, Any]) -> HookReply:
        """SubagentStop, PreCompact, Notification and anything newer: logged as is."""
        skip = {"session_id", "transcript_path", "cwd", "hook_event_name"}
        detail = {k: short(scrub_value(v), 300) for k, v in payload.items() if k not in skip}
        event = HookReceived(
            agent_id=agent.id,
            ts=time.time(),
            hook=short(name, 60),
            session_id=agent.session_id or "",
            detail=detail,
        )
        await self._save(agent, [event])
        return HookReply()


_WAITING = (AgentState.AWAITING_PERMISSION, AgentState.AWAITING_INPUT, AgentState.AWAITING_AGENTS)


def _steps(
    old: AgentState, new: AgentState, reason: str | None
) -> list[tuple[AgentState, str | None]]:
    """The changes a hook's report of ``new`` implies, in order. Hooks report what
    a session does, not each change: one that ended and reports again came back
    (``claude --resume``: ``starting``), and one that waits for a permission was at
    work, whatever the hook before it said (``running``)."""
    if new == old:
        return []
    steps: list[tuple[AgentState, str | None]] = []
    if old.is_final:
        steps.append((AgentState.STARTING, "resumed"))
        old = AgentState.STARTING
    if new in _WAITING and old in (AgentState.STARTING, AgentState.IDLE):
        steps.append((AgentState.RUNNING, "at work (a hook reported it waiting)"))
    return [*steps, (new, reason)]
