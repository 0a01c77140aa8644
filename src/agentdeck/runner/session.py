"""One supervised Claude Code process for one agent.

An ``AgentSession`` owns a ``ClaudeSDKClient``, reads every message it yields,
turns it into events and commits them together with the agent row (so the board
never disagrees with the log). Steering — follow-ups, interrupt, kill, graceful
close — goes through it. In one-shot mode (``agentdeck run``) the session ends
after its first result, once no turn, background task or report of one is
under way or owed (``runner.background``): stdin is closed and the CLI is read
until it exits.

The session is built in parts, one responsibility each: its state and write
path (``session_state``), its end (``session_exit``), its stream
(``session_stream``), its steering (``session_steering``); its start (the
spawn, its options, the adoption of a warm process) is here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agentdeck.core.agent import AgentState
from agentdeck.core.events import ErrorOccurred, Notice
from agentdeck.core.sandbox import SandboxSpec
from agentdeck.core.worktree import Worktree
from agentdeck.errors import AgentProcessError, SandboxUnavailable
from agentdeck.runner import config_dirs, endpoints, procs, sandboxing, sdk_private
from agentdeck.runner.options import build_options, settings_for
from agentdeck.runner.recording.seam import recording_endpoint
from agentdeck.runner.session_state import (
    ABORT_GRACE_SECONDS,
    READER_GRACE_SECONDS,
    RESULT_EXCERPT_CHARS,
    STOPPED_STARTING,
    SUSPENDED,
    final_state_for,
    stopped_start,
)
from agentdeck.runner.session_steering import SessionSteering
from agentdeck.telemetry import claude_env
from agentdeck.worktrees.admin import confine

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

__all__ = [
    "ABORT_GRACE_SECONDS",
    "READER_GRACE_SECONDS",
    "RESULT_EXCERPT_CHARS",
    "STOPPED_STARTING",
    "SUSPENDED",
    "AgentSession",
    "final_state_for",
    "stopped_start",
]

logger = logging.getLogger(__name__)


class AgentSession(SessionSteering):
    """One supervised Claude Code process for one agent (see the module)."""

    # -- lifecycle -------------------------------------------------------------

    async def start(self, prompt: str | None) -> None:
        """Spawn the CLI and send the first prompt (none: wait idle for one).

        Raises ``AgentProcessError``.
        """
        try:
            await self._start(prompt)
        finally:
            if self._warm is not None and self._warm_pool is not None:  # never reached spawn
                self._warm_pool.discard(self._warm, keep_cwd=True)
                self._warm = None
            self._started.set()  # a message sent meanwhile goes now, after the prompt

    async def _start(self, prompt: str | None) -> None:
        extension = self.extension
        client: ClaudeSDKClient | None = None
        slot = False
        try:
            self._go_on()
            tree = await extension.budget(self.agent) if extension else None
            profile = self.governor.profile_for(self.agent)
            sandbox = profile.sandbox
            worktree = Worktree.from_extra(self.agent.extra)
            if worktree is not None and sandbox.enabled:
                sandbox = sandbox.with_git_dir(
                    await confine(worktree), workspace=self.agent.cwd, home=str(Path.home())
                )
            self.sandboxing = await self._warm_sandboxing(sandbox) or await sandboxing.prepare(
                sandbox,
                workspace=Path(self.agent.cwd),
                settings=settings_for(self.settings, self.agent, self._base_url, profile),
                endpoint=recording_endpoint(extension)
                or self._base_url
                or endpoints.model_url(self.agent.spec, profile, self.settings)
                or self.settings.anthropic_base_url,
                on_blocked=self._network_blocked,
            )
            await self._commit(
                [
                    Notice(
                        agent_id=self.agent.id,
                        ts=time.time(),
                        kind="sandbox",
                        message=self.sandboxing.notice,
                    )
                ]
                if self.sandboxing.notice
                else [],
                extra={**self.agent.extra, "sandbox": self.sandboxing.label},
            )
            # Its place in its tree's trace, from its ancestry (telemetry on only).
            await claude_env.learn_root(self.settings, self.agent, self.governor.ancestors)
            options = self.spawn_options()
            slot = await self._take_slot()
            self._go_on()
            client = self._connecting = self._client_for(options)
            try:
                async with asyncio.timeout(self.settings.connect_timeout_seconds):
                    await client.connect()
            finally:  # abort_start() must never signal a pid that is no longer its process
                self._connecting = None
            self._go_on()  # stopped while it connected: it goes no further
        except asyncio.CancelledError:
            try:
                if client is not None:  # the process may be up already: never leave it
                    pid = sdk_private.pid_of(client)
                    if pid is not None:  # at once: a process mid-start does not read stdin
                        await asyncio.shield(
                            asyncio.to_thread(
                                procs.terminate_tree, pid, self.settings.stop_grace_seconds
                            )
                        )
                    await asyncio.shield(self._disconnect(client))
                await asyncio.shield(self.sandboxing.close())
                # Never left ``starting`` with no process: stopped before it began.
                try:
                    await asyncio.shield(self._record_stopped_start())
                except Exception:
                    logger.exception(
                        "agent %s: its start was stopped, but that could not be recorded",
                        self.agent.id,
                    )
            finally:
                self.finished.set()
            raise
        except (Exception, TimeoutError) as exc:
            # Whatever stopped it, the agent says so: never left ``starting``.
            try:
                raise await self._start_failed(client, exc) from exc
            finally:
                self.finished.set()
        finally:
            if slot and self._start_slots is not None:
                self._start_slots.release()
        self._client = client
        self.spawned_pid = self.pid
        self.guard = self._make_guard(tree)
        self._clock = asyncio.create_task(self._watch_clock(), name=f"agent-clock-{self.agent.id}")
        self._exit_watch = asyncio.create_task(
            self._watch_exit(), name=f"agent-exit-{self.agent.id}"
        )
        if self.warm_start:  # on a process the pool started ahead: the board can say so
            await self._commit(
                [], pid=self.pid, owner_pid=os.getpid(), extra={**self.agent.extra, "warm": True}
            )
        else:
            await self._commit([], pid=self.pid, owner_pid=os.getpid())
        self._reader = asyncio.create_task(self._read(), name=f"agent-reader-{self.agent.id}")
        if self._stopping is not None:
            # Killed, closed or suspended while it was starting: it gets no prompt,
            # its process goes, and the reader records the state that was asked for.
            pid = self.pid
            if pid is not None:
                await asyncio.to_thread(procs.terminate_tree, pid, self.settings.stop_grace_seconds)
            return
        if prompt is None:
            await self._commit([], state=AgentState.IDLE)
        else:
            await self.send(prompt)

    def spawn_options(self) -> ClaudeAgentOptions:
        """The SDK's options for its Claude Code process (once its sandbox is prepared)."""
        extension = self.extension
        profile = self.governor.profile_for(self.agent)
        options = build_options(
            self.agent.spec,
            mcp_servers=extension.mcp_servers(self.agent) if extension else None,
            extra_env={
                **(extension.env(self.agent) if extension else {}),
                **claude_env.for_agent(self.settings, self.agent),  # even on a carried id
            },
            settings=self.settings,
            cwd=Path(self.agent.cwd),
            can_use_tool=self._can_use_tool,
            pre_tool=self._pre_tool,
            hook_timeout=profile.approval_timeout_seconds + 60,
            profile=profile,
            extra_hooks=self.memory.hooks() if self.memory else None,
            agent_id=procs.carried_id(self.agent.id, self.agent.extra),
            stderr=self._stderr.append,
            base_url=self._base_url,
            resume=self._resume,
            fork=self._fork,
            stopping=lambda: self.unanswerable,
        )
        self.sandboxing.apply(options)
        return options

    async def _warm_sandboxing(self, sandbox: SandboxSpec) -> sandboxing.Sandboxing | None:
        """The confinement of the warm process it was given, if that process runs
        confined exactly as its profile asks (same sandbox, same workspace): the
        process can only be adopted inside it. Another is closed, not used."""
        profile = self.governor.profile_for(self.agent)
        if self._warm is None or config_dirs.is_isolated(self.agent.spec, profile):
            return None  # a warm confinement's view is over the user's config directory
        box = self._warm.take_sandboxing(self._network_blocked)
        if box is None or box.confinement is None:
            return None
        plan = box.confinement.plan
        if box.confinement.spec == sandbox and plan.workspace == Path(self.agent.cwd).resolve():
            return box
        await box.close()
        return None

    def _client_for(self, options: ClaudeAgentOptions) -> ClaudeSDKClient:
        """Its client: on the warm process it was given if that process was spawned
        exactly as this one would be, else on a process of its own."""
        warm, self._warm = self._warm, None
        if warm is not None:
            if warm.fits(options):
                warm.stderr.attach(self._stderr.append)
                self.warm_start = True
                return sdk_private.held_client(options, transport=warm.transport)
            if self._warm_pool is not None:
                self._warm_pool.discard(warm, keep_cwd=True)  # the workspace is this agent's
        return sdk_private.held_client(options)

    async def _start_failed(
        self, client: ClaudeSDKClient | None, exc: BaseException
    ) -> AgentProcessError:
        """A start that failed (or was stopped) cleaned up and recorded: ``error``
        with why, or as a stopped start; the error to raise."""
        if client is not None:
            if self._aborted and (pid := sdk_private.pid_of(client)) is not None:
                await asyncio.to_thread(procs.terminate_tree, pid, ABORT_GRACE_SECONDS)
            await self._disconnect(client)
        await self.sandboxing.close()
        if self._aborted:  # a stop was asked for: no error of the agent's
            await self._record_stopped_start()
            return AgentProcessError(STOPPED_STARTING)
        if isinstance(exc, SandboxUnavailable):
            message, kind = f"sandbox unavailable: {exc.message}", "sandbox"
        else:
            message, kind = f"could not start Claude Code: {self._why(exc)}", "spawn"
        await self._commit(
            [
                ErrorOccurred(
                    agent_id=self.agent.id,
                    ts=time.time(),
                    kind=kind,
                    message=message,
                    detail=self.stderr_tail(),
                )
            ],
            state=AgentState.ERROR,
            last_error=message,
            pid=None,
        )
        return AgentProcessError(message, stderr=self.stderr_tail())

    def _go_on(self) -> None:
        """The start's next step, unless a stop was asked for meanwhile."""
        if self._aborted:
            raise _StartStopped(STOPPED_STARTING)

    async def _take_slot(self) -> bool:
        """Its turn to boot (``start_slots``: a burst of starts does not boot every
        Claude Code at once on a small machine); a stop meanwhile ends the wait."""
        if self._start_slots is None:
            return False
        waiting = self._waiting_slot = asyncio.ensure_future(self._start_slots.acquire())
        try:
            await waiting
            return True
        except asyncio.CancelledError:
            if self._aborted and waiting.cancelled():
                raise _StartStopped(STOPPED_STARTING) from None
            raise
        finally:
            self._waiting_slot = None

    async def _record_stopped_start(self) -> None:
        """A start stopped before the agent ran: ``interrupted`` (or ``killed``), and
        marked to be started again by the next daemon when it was suspended (the
        daemon stopping), whichever way the stop reached the start."""
        extra, last_error = stopped_start(self.agent.extra, suspended=self._suspended)
        await self._commit(
            [], state=self._stopped_starting(), last_error=last_error, pid=None, extra=extra
        )

    async def _disconnect(self, client: ClaudeSDKClient) -> None:
        """The SDK's clean-up of a start that failed or was stopped: its process is
        gone or going, so it gets a bounded moment, never a stop's whole time."""
        try:
            await asyncio.wait_for(
                asyncio.shield(client.disconnect()), self.settings.stop_grace_seconds * 2
            )
        except (Exception, TimeoutError) as exc:
            logger.debug("agent %s: the SDK's clean-up failed: %r", self.agent.id, exc)


class _StartStopped(Exception):
    """A stop was asked for while the agent started: its start goes no further."""
