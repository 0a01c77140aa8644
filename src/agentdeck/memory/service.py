"""Memory as the hooks bridge and the runner use it: capture, summarize, recall.

One object for both kinds of session, so a hand-started session and an agent
run by agentdeck are remembered (and told what came before) the same way.
Nothing is stored for a project that opted out — ``.agentdeck/ignore`` in the
project, ``AGENTDECK_MEMORY_IGNORE`` or ``AGENTDECK_MEMORY_ENABLED=false`` — and
everything is scrubbed of secrets and ``<private>`` content before it is kept.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

from agentdeck.core.events import Notice, ObservationRecorded
from agentdeck.core.memory import (
    MemoryKind,
    Observation,
    SessionSummary,
    build_context,
    estimate_tokens,
    make_observation,
    render_summary,
    summarize_session,
)
from agentdeck.core.memory_proposals import build_learned
from agentdeck.core.redact import scrub
from agentdeck.memory.model_summary import request_timeout, summarize_with_model
from agentdeck.memory.projects import project_of
from agentdeck.memory.proposals import Proposals
from agentdeck.settings import Settings
from agentdeck.store.memory import MemoryStore
from agentdeck.store.store import Store

logger = logging.getLogger(__name__)

IGNORE_FILE = Path(".agentdeck") / "ignore"
CONTEXT_SUMMARIES = 10
CONTEXT_OBSERVATIONS = 60
SESSION_OBSERVATIONS = 20_000  # a summary reads its whole session (long ones too)


class Memory:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.records = MemoryStore(store)
        self.settings = settings
        self._ignored = {project_of(p) for p in settings.memory_ignore}
        self._tasks: set[asyncio.Task[None]] = set()

    def enabled_for(self, project: str) -> bool:
        """Whether sessions of ``project`` are remembered and told what came before.
        An opt-out covers the project's subdirectories too."""
        if not self.settings.memory_enabled or not project:
            return False
        try:
            path = Path(project)
            for directory in (path, *path.parents):
                if str(directory) in self._ignored or (directory / IGNORE_FILE).exists():
                    return False
        except (OSError, ValueError):  # ValueError: a NUL in the path
            return False  # an unreadable project: deny when unsure
        return True

    async def observe(
        self,
        *,
        agent_id: str,
        session_id: str,
        project: str,
        tool: str,
        tool_input: dict[str, Any],
        output: Any,
        is_error: bool,
    ) -> Observation | None:
        if not self.enabled_for(project):
            return None
        observation = make_observation(
            tool=tool,
            tool_input=tool_input,
            output=output,
            is_error=is_error,
            project=project,
            session_id=session_id,
            agent_id=agent_id,
            ts=time.time(),
        )
        await self.records.add_observation(observation)
        await self._recorded(
            agent_id, observation.id, MemoryKind.OBSERVATION, observation.input_summary
        )
        return observation

    async def summarize(
        self,
        *,
        agent_id: str,
        session_id: str,
        project: str,
        final_message: str,
        request: str = "",
        final: bool = False,
    ) -> SessionSummary | None:
        """The session's token-free summary (replacing an earlier one). At the
        ``final`` one, the optional model-written summary is made in the
        background (it never holds up the hook that ended the session)."""
        if not self.enabled_for(project):
            return None
        observations = await self.records.session_observations(session_id, SESSION_OBSERVATIONS)
        if not observations and not final_message.strip():
            return None
        summary = summarize_session(
            observations,
            final_message=final_message,
            request=request,
            project=project,
            session_id=session_id,
            agent_id=agent_id,
            ts=time.time(),
        )
        saved = await self.records.save_summary(summary)
        text = render_summary(saved)
        await self._recorded(agent_id, saved.id, MemoryKind.SUMMARY, text.split("\n", 1)[0])
        if final and self.settings.memory_model_summary:
            task = asyncio.create_task(self._model_summary(saved, text), name="model-summary")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return saved

    async def _model_summary(self, summary: SessionSummary, text: str) -> None:
        try:
            written = await summarize_with_model(self.settings, text)
            if written is None:
                return
            # The session may have gone on meanwhile (resumed): amend what is stored now.
            current = await self.records.get(summary.id)
            if isinstance(current, SessionSummary):
                summary = current
            await self.records.save_summary(
                dataclasses.replace(summary, model_summary=scrub(written.text))
            )
            if summary.agent_id:
                await self.store.append(
                    [
                        Notice(
                            agent_id=summary.agent_id,
                            ts=time.time(),
                            kind="memory_summary",
                            message=f"the model summarized the session for ${written.cost_usd:.4f}",
                            detail={"memory_id": summary.id, "cost_usd": written.cost_usd},
                        )
                    ]
                )
        except Exception:
            logger.exception("model summary of session %s failed", summary.session_id)

    async def drain(self) -> None:
        """Wait for model summaries under way (the daemon stops after them)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=request_timeout(self.settings) + 5)

    async def context(self, project: str, template: str | None = None) -> str:
        """What a new session in ``project`` is told at its start ("" if nothing).
        An agent agentdeck runs (``template``: its template's name, "" for none) is
        first told the memories earlier agents of its template left there and a
        person accepted (``memory.proposals``), in at most half the budget."""
        if not self.enabled_for(project):
            return ""
        budget = self.settings.memory_context_tokens
        learned = ""
        if template is not None:
            accepted = await Proposals(self.store).learned(template, project)
            learned = build_learned(accepted, budget_tokens=budget // 2)
        summaries = await self.records.recent_summaries(project, CONTEXT_SUMMARIES)
        observations = await self.records.recent_observations(project, CONTEXT_OBSERVATIONS)
        history = build_context(
            summaries,
            observations,
            budget_tokens=max(0, budget - (estimate_tokens(learned) + 1 if learned else 0)),
            project=project,
            now=time.time(),
        )
        return "\n\n".join(part for part in (learned, history) if part)

    async def _recorded(self, agent_id: str, memory_id: str, kind: MemoryKind, title: str) -> None:
        await self.store.append(
            [
                ObservationRecorded(
                    agent_id=agent_id,
                    ts=time.time(),
                    memory_id=memory_id,
                    kind=str(kind),
                    title=title[:200],
                )
            ]
        )
