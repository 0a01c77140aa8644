"""A session's stream: each message Claude Code yields, mapped to events.

The messages are mapped (``runner.mapping``), committed with the row's changes,
shown to the guardrails and the memory; a result ends a turn (its worktree
changes are committed) and, in one-shot mode, the session's input.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

import anyio.to_thread

from agentdeck.core import output_schema, skills
from agentdeck.core.agent import AgentState
from agentdeck.core.compaction import COMMAND
from agentdeck.core.event_scrub import scrubbed_head
from agentdeck.core.events import Event, Notice, UserMessageSent
from agentdeck.core.output_schema import STRUCTURED_RESULT, STRUCTURED_TOLD
from agentdeck.core.partial import PartialSink
from agentdeck.core.redact import scrub
from agentdeck.core.worktree import Worktree
from agentdeck.errors import WorktreeError
from agentdeck.runner import sandboxing
from agentdeck.runner.auto_compact import AutoCompactor
from agentdeck.runner.budgets import warnings_due
from agentdeck.runner.session_exit import SessionExit
from agentdeck.runner.session_state import (
    _INTERRUPTED_REASONS,
    RESULT_EXCERPT_CHARS,
    final_state_for,
)

logger = logging.getLogger(__name__)


class SessionStream(SessionExit):
    """Reads the session's messages until its process ends."""

    # Where the text being written goes (the daemon's event hub), set by the runner.
    partials: PartialSink | None = None
    _compactor: AutoCompactor | None = None  # set at its first message

    async def _read(self) -> None:
        assert self._client is not None
        failure: BaseException | None = None
        try:
            async for message in self._client.receive_messages():
                await self._on_message(message)
        except asyncio.CancelledError:
            failure = None
            raise
        except Exception as exc:  # noqa: BLE001 - any SDK failure ends this agent
            failure = exc
        finally:
            if self.partials is not None:
                self.partials.end(self.agent.id)  # a text cut short: nothing kept of it
            await asyncio.shield(self._on_exit(failure))

    async def _on_message(self, message: object) -> None:
        self._background_tasks.see(message)
        if self._mapper.heavy(message):  # scrubs megabytes: off the loop
            mapped = await anyio.to_thread.run_sync(self._mapper.map, message)
        else:
            mapped = self._mapper.map(message)
        if mapped.partial:  # text being written: shown live, never committed
            if mapped.delta is not None and self.partials is not None:
                d = mapped.delta
                self.partials.write(self.agent.id, d.block, d.text, d.parent_tool_use_id)
            return
        if mapped.events and self.partials is not None:
            self.partials.end(self.agent.id)  # the whole message: its event shows it
        changes: dict[str, Any] = dict(mapped.changes)
        # Claude Code's init (a SystemMessage; its class not imported: the SDK loads
        # lazily, tests/runner/test_lazy_sdk.py)
        init = (
            getattr(message, "data", None) if getattr(message, "subtype", None) == "init" else None
        )
        if isinstance(init, dict):
            self._offered_skills(init, changes)
        result = mapped.result
        retry = None  # the one follow-up a result that does not match its schema gets
        if result is not None:
            self.last_result = result
            changes.update(
                cost_usd=self._cost_base + (result.total_cost_usd or 0.0),
                input_tokens=self.agent.input_tokens + _tokens(mapped.events, "input_tokens"),
                output_tokens=self.agent.output_tokens + _tokens(mapped.events, "output_tokens"),
                turns=self.agent.turns + result.num_turns,
                last_error=scrub(result.result or "; ".join(result.errors or []) or result.subtype)
                if result.is_error and result.terminal_reason not in _INTERRUPTED_REASONS
                else None,
                extra={
                    **self.agent.extra,
                    "last_result": scrubbed_head(result.result or "", RESULT_EXCERPT_CHARS),
                    "last_is_error": bool(result.is_error),
                },
            )
            if self.agent.spec.output_schema is not None:
                retry = self._structured(result, changes)
            if retry is not None:
                pass  # not the end of its run: it is told, and answers again
            elif self.keep_alive:
                changes["state"] = AgentState.IDLE
            else:
                self._final = final_state_for(result)
                if changes.get("last_error") and self._final == AgentState.DONE:
                    self._final = AgentState.ERROR
        elif mapped.events and self.agent.state == AgentState.STARTING:
            changes["state"] = AgentState.RUNNING
        if self._compactor is None:
            self._compactor = AutoCompactor(self.agent.id, self.agent.spec.auto_compact_at)
        compacting = self._compactor.observe(  # its auto_compact_at passed: runner.auto_compact
            mapped.events,
            between_turns=changes.get("state") is AgentState.IDLE
            and not (result is not None and result.is_error)
            and not self._stopping,
            message=message,  # the turn's model and its context window
        )
        mapped.events += self._compactor.notices()  # a share it could not apply, once
        if compacting:  # it stays running: compacting, a follow-up queued behind
            mapped.events += compacting
            changes["state"] = AgentState.RUNNING
        if self.sandboxing.label in ("process", "bash"):
            mapped.events += sandboxing.blocked_write_events(self.agent.id, mapped.events)
        if mapped.events or changes:
            await self._commit(mapped.events, **changes)
            if self.memory is not None:
                self.memory.saw(mapped.events)
        if self.guard is not None:
            for event in mapped.events:
                stop = self.guard.observe(event)
                if stop is not None:
                    await self._trip(stop)
            daily = (self.fleet, *self.budgets) if self.fleet else self.budgets
            if warnings := warnings_due(daily, self.agent.id, time.time()):
                await self._commit(list(warnings))
        if compacting and not self._stopping and not self.finished.is_set():
            assert self._client is not None
            await self._client.query(COMMAND)
        if retry is not None:
            await self._tell(retry)
        elif result is not None:
            await self._snapshot_turn()
            self._results.put_nowait(result)
            self.turn_over.set()
        # One-shot: its input ends with its work (after its first result), not while
        # a background task or the turn reporting it may still ask (the answers
        # would never reach the CLI): at a result, or when the last task ends.
        if (
            not self.keep_alive
            and self.turn_over.is_set()
            and not self._input_ended
            and not self._background_tasks.holds_input
        ):
            await self._end_input()

    def _offered_skills(self, init: dict[str, Any], changes: dict[str, Any]) -> None:
        """The skills Claude Code offered it (core.skills.offered), on its row when
        they differ from what it holds (each process start says them again)."""
        names = [scrub(n) for n in skills.offered(init, self.agent.spec.claude.skills)]
        if names != self.agent.extra.get(skills.OFFERED):
            changes["extra"] = {**self.agent.extra, skills.OFFERED: names}

    def _structured(self, result: Any, changes: dict[str, Any]) -> str | None:
        """The result judged against the spec's schema (core.output_schema): kept
        on the row when it matches; else the follow-up it is told (once), or its
        run fails naming what did not match."""
        assert self.agent.spec.output_schema is not None
        extra = changes["extra"]
        verdict, found = output_schema.judge(
            self.agent.spec.output_schema,
            result.structured_output,
            failed=bool(result.is_error),
            told=bool(self.agent.extra.get(STRUCTURED_TOLD)),
        )
        extra.pop(STRUCTURED_TOLD, None)
        if verdict == "accepted":
            extra[STRUCTURED_RESULT] = output_schema.scrubbed(result.structured_output, scrub)
        elif verdict == "tell":
            extra[STRUCTURED_TOLD] = True
            return output_schema.follow_up(found)
        elif verdict == "fail":
            extra.pop(STRUCTURED_RESULT, None)
            changes["last_error"] = scrub(
                "the structured result does not match: " + "; ".join(found)
            )
            extra["last_is_error"] = True
        return None

    async def _tell(self, text: str) -> None:
        assert self._client is not None
        await self._commit([UserMessageSent(agent_id=self.agent.id, ts=time.time(), text=text)])
        await self._client.query(text)

    async def _snapshot_turn(self) -> None:
        """What the turn left uncommitted in the agent's worktree, committed on its
        branch: nothing lives only in a working tree. Then what its commits wrote
        in its own object directory, verified into the repository's store."""
        worktree = Worktree.from_extra(self.agent.extra)
        if worktree is None:
            return
        notices: list[tuple[str, dict[str, str]]] = []
        if self.worktrees is not None and self.settings.worktree_wip_commits:
            try:
                commit = await self.worktrees.commit_wip(
                    worktree,
                    f"agentdeck: {self.agent.name}, work in progress (turn {self.agent.turns})",
                )
            except WorktreeError as exc:
                notices.append((f"the turn's changes could not be committed: {exc}", {}))
            else:
                if commit is not None:
                    message = f"committed the turn's changes on {worktree.branch} as {commit[:12]}"
                    notices.append((message, {"commit": commit, "branch": worktree.branch}))
        now = time.time()
        events: list[Event] = [
            Notice(agent_id=self.agent.id, ts=now, kind="worktree", message=m, detail=d)
            for m, d in notices
        ]
        events += await self._taken_in()
        if events:
            await self._commit(events)


def _tokens(events: Sequence[Event], name: str) -> int:
    from agentdeck.core.events import TurnCompleted

    return sum(int(getattr(e, name)) for e in events if isinstance(e, TurnCompleted))
