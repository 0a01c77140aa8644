"""Memory for agents run by agentdeck, through the SDK's in-process hooks.

The same capture and injection as the hooks bridge gives hand-started
sessions: each tool result becomes an observation, each finished turn updates
the session's summary, and the first prompt of a new session carries the
project's memory as additional context. Memory must never stop an agent: a
failure here is logged and the hook answers nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, cast

from claude_agent_sdk.types import HookCallback, HookContext, HookInput, HookJSONOutput, HookMatcher

from agentdeck.core.agent import Agent
from agentdeck.core.worktree import Worktree
from agentdeck.errors import AgentdeckError
from agentdeck.memory.projects import project_of
from agentdeck.memory.service import Memory

logger = logging.getLogger(__name__)

MEMORY_HOOK_TIMEOUT_SECONDS = 30.0


class SessionMemory:
    """Hook callbacks for one agent session. ``agent`` is read at each call
    (the session replaces its Agent on every change)."""

    def __init__(self, memory: Memory, agent: Callable[[], Agent], *, inject: bool) -> None:
        self.memory = memory
        self._agent = agent
        self._inject = inject  # only a new session is told; a resumed one has its history
        self._request = ""
        self._final_message = ""
        self._last: asyncio.Task[None] | None = None  # the newest observation's recording

    def hooks(self) -> dict[str, list[HookMatcher]]:
        def matcher(callback: HookCallback) -> list[HookMatcher]:
            return [
                HookMatcher(matcher=None, hooks=[callback], timeout=MEMORY_HOOK_TIMEOUT_SECONDS)
            ]

        return {
            "UserPromptSubmit": matcher(self._prompt),
            "PostToolUse": matcher(self._tool_done),
            "PostToolUseFailure": matcher(self._tool_failed),
            "Stop": matcher(self._stop),
        }

    @property
    def project(self) -> str:
        """The agent's directory; in a worktree, its repository (the one worktree's
        memory is every later session's in the repository)."""
        agent = self._agent()
        worktree = Worktree.from_extra(agent.extra)
        return project_of(worktree.repo if worktree is not None else agent.cwd)

    async def _prompt(self, data: HookInput, _id: str | None, _ctx: HookContext) -> HookJSONOutput:
        payload = cast(dict[str, Any], data)
        if not self._request:
            self._request = str(payload.get("prompt") or "")
        if not self._inject:
            return {}
        self._inject = False
        try:
            context = await self.memory.context(self.project)
        except AgentdeckError as exc:  # known (a full disk): one line
            logger.warning("memory: no context for agent %s: %s", self._agent().id, exc)
            return {}
        except Exception:
            logger.exception("memory: could not build the context for agent %s", self._agent().id)
            return {}
        if not context:
            return {}
        return {
            "hookSpecificOutput": {
                "hookEventName": "UserPromptSubmit",
                "additionalContext": context,
            }
        }

    async def _tool_done(self, data: HookInput, _id: str | None, _c: HookContext) -> HookJSONOutput:
        payload = cast(dict[str, Any], data)
        self._in_order(self._observe(payload, payload.get("tool_response"), is_error=False))
        return {}

    async def _tool_failed(
        self, data: HookInput, _i: str | None, _c: HookContext
    ) -> HookJSONOutput:
        payload = cast(dict[str, Any], data)
        self._in_order(self._observe(payload, payload.get("error"), is_error=True))
        return {}

    def _in_order(self, work: Coroutine[Any, Any, None]) -> None:
        """Claude Code waits for a PostToolUse hook before it shows the tool's result
        to the model: an observation is recorded after the hook has answered (one
        after the other, in the calls' order), so the call costs none of it."""
        before = self._last

        async def after() -> None:
            if before is not None:
                await asyncio.wait([before])
            await work

        self._last = asyncio.get_running_loop().create_task(after(), name="memory-observe")

    async def settled(self) -> None:
        """Every observation handed over so far is recorded (or its failure logged)."""
        if self._last is not None:
            await asyncio.wait([self._last])

    async def _observe(self, payload: dict[str, Any], output: Any, *, is_error: bool) -> None:
        agent = self._agent()
        tool_input = payload.get("tool_input")
        try:
            await self.memory.observe(
                agent_id=agent.id,
                session_id=str(payload.get("session_id") or agent.session_id or ""),
                project=self.project,
                tool=str(payload.get("tool_name") or "unknown"),
                tool_input=tool_input if isinstance(tool_input, dict) else {},
                output=output,
                is_error=is_error,
            )
        except AgentdeckError as exc:  # known (a full disk): one line
            logger.warning("memory: no observation for agent %s: %s", agent.id, exc)
        except Exception:
            logger.exception("memory: could not record an observation for agent %s", agent.id)

    async def _stop(self, data: HookInput, _id: str | None, _ctx: HookContext) -> HookJSONOutput:
        payload = cast(dict[str, Any], data)
        self._final_message = str(payload.get("last_assistant_message") or "")
        await self._summarize(str(payload.get("session_id") or ""), final=False)
        return {}

    async def ended(self) -> None:
        """The agent's process is gone: the session's last summary (and, if
        enabled, the model-written one). There is no in-process SessionEnd hook."""
        await self._summarize("", final=True)

    async def _summarize(self, session_id: str, *, final: bool) -> None:
        await self.settled()  # the summary reads the session's observations
        agent = self._agent()
        session_id = session_id or agent.session_id or ""
        if not session_id:
            return  # it never started a Claude session: nothing to remember
        try:
            await self.memory.summarize(
                agent_id=agent.id,
                session_id=session_id,
                project=self.project,
                final_message=self._final_message,
                request=self._request or agent.spec.prompt,
                final=final,
            )
        except AgentdeckError as exc:  # known (a full disk): one line
            logger.warning("memory: could not summarize agent %s: %s", agent.id, exc)
        except Exception:
            logger.exception("memory: could not summarize agent %s", agent.id)
