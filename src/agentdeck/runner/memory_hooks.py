"""Memory for agents run by agentdeck: the SDK's in-process hooks, and the tool
results the session reads.

The same capture and injection as the hooks bridge gives hand-started
sessions: each tool result becomes an observation (read off the session's
messages, not a hook Claude Code would wait for), each finished turn updates
the session's summary, and the first prompt of a new session carries the
project's memory as additional context. Memory must never stop an agent: a
failure here is logged and the hook answers nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, cast

from agentdeck.core.agent import Agent
from agentdeck.core.events import Event, ToolCalled, ToolReturned
from agentdeck.core.worktree import Worktree
from agentdeck.errors import AgentdeckError
from agentdeck.memory.projects import project_of
from agentdeck.memory.service import Memory

if TYPE_CHECKING:
    from claude_agent_sdk.types import (
        HookCallback,
        HookContext,
        HookInput,
        HookJSONOutput,
        HookMatcher,
    )

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
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}  # tool_use_id: tool, input
        self._denied: set[str] = set()

    def hooks(self) -> dict[str, list[HookMatcher]]:
        from claude_agent_sdk.types import HookMatcher  # when its session starts

        def matcher(callback: HookCallback) -> list[HookMatcher]:
            return [
                HookMatcher(matcher=None, hooks=[callback], timeout=MEMORY_HOOK_TIMEOUT_SECONDS)
            ]

        return {
            "UserPromptSubmit": matcher(self._prompt),
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
            # An agent of ours: told its template's accepted memories too.
            context = await self.memory.context(self.project, self._agent().spec.template or "")
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

    def saw(self, events: Sequence[Event]) -> None:
        """Each tool result the session reads becomes an observation, recorded after
        (one by one, in the calls' order): no hook, so a call waits for none of it
        (Claude Code waits for a PostToolUse hook's answer before the model sees the
        result). A call the policy denied never ran: it leaves none."""
        for event in events:
            if isinstance(event, ToolCalled):
                self._calls[event.tool_use_id] = (event.tool, event.input)
            elif isinstance(event, ToolReturned):
                call = self._calls.pop(event.tool_use_id, None)
                if call is not None and event.tool_use_id not in self._denied:
                    self._in_order(self._observe(*call, event.output, is_error=event.is_error))
                self._denied.discard(event.tool_use_id)

    def denied(self, tool_use_id: str | None) -> None:
        if tool_use_id:
            self._denied.add(tool_use_id)

    def _in_order(self, work: Coroutine[Any, Any, None]) -> None:
        """``work`` after what was handed over before it."""
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

    async def _observe(
        self, tool: str, tool_input: dict[str, Any], output: str, *, is_error: bool
    ) -> None:
        agent = self._agent()
        try:
            await self.memory.observe(
                agent_id=agent.id,
                session_id=agent.session_id or "",
                project=self.project,
                tool=tool,
                tool_input=tool_input,
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
