"""The deck's ``remember`` tool, which every agent gets: the agent proposes a
learning and it waits in the Memories inbox (``memory.proposals``), unless its
template says ``memory_review: auto``.

Only a template the agent cannot have written itself may skip review: a user's
or a built-in one. A project's template saying ``auto`` is reviewed anyway (the
agent may write the project's ``.claude/agents``), and the agent is told so.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from agentdeck.core.agent import Agent
from agentdeck.core.memory_proposals import (
    KINDS,
    PENDING_PER_AGENT,
    TEXT_MAX_BYTES,
    skips_review,
)
from agentdeck.errors import AgentdeckError
from agentdeck.memory.proposals import Proposals, agent_project
from agentdeck.orchestration.host import Orchestration
from agentdeck.orchestration.templates import resolve

logger = logging.getLogger(__name__)

DESCRIPTION = (
    "Propose a learning for later agents of your template in this project: a command "
    "that works, a convention, a pitfall (e.g. \"this repo's tests need -p "
    'no:cacheprovider"). A person reviews it before it is used; one learning per call, '
    f"at most {TEXT_MAX_BYTES} bytes, at most {PENDING_PER_AGENT} waiting at once."
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The learning, in a sentence or two."},
        "kind": {"type": "string", "enum": list(KINDS), "description": "What sort it is."},
    },
    "required": ["text", "kind"],
    "additionalProperties": False,
}


async def review_of(orch: Orchestration, agent: Agent) -> tuple[bool, str]:
    """Whether ``agent``'s template skips review, and why not when it says auto."""
    if not agent.spec.template:
        return False, ""
    try:
        template = await asyncio.to_thread(
            resolve, orch.settings, agent.spec.template, agent.spec.project
        )
    except AgentdeckError as exc:  # gone or broken since: a person reviews
        logger.info("remember: template %s not read: %s", agent.spec.template, exc)
        return False, ""
    if skips_review(template.memory_review, template.scope):
        return True, ""
    if template.memory_review == "auto":
        return False, " (a project's template may not skip review)"
    return False, ""


async def remember(orch: Orchestration, agent_id: str, args: dict[str, Any]) -> str:
    agent = await orch.agent(agent_id)
    auto, why = await review_of(orch, agent)
    project = agent_project(agent)
    kept = await Proposals(orch.store).remember(
        agent,
        args.get("text"),
        args.get("kind"),
        auto=auto,
        enabled=orch.runner.memory.enabled_for(project),
    )
    whose = f"agents of template {kept.template}" if kept.template else "agents with no template"
    if auto:
        return f"Remembered {kept.id}: later {whose} in {project} are told it at their start."
    return (
        f"Proposed {kept.id}{why}: once a person accepts it, later {whose} in {project} "
        "are told it at their start."
    )
