"""Claude Code's ``AskUserQuestion``: one question in the Asks inbox, not an approval.

The tool runs nothing: it asks a person to choose. So it is not judged like a
tool that acts:

- it is refused only where asking is: a rule of the agent's profile (or its
  ``--deny``, a remembered deny) naming ``AskUserQuestion``, or a profile that
  denies the deck's own ``ask_orchestrator`` (an agent that may not ask);
- anything else — the profile's default, an ``ask`` or ``allow`` rule, a
  template's tool list without it — lets it through to a person, with no
  approval request: the question itself is the request.

The ``PreToolUse`` hook lets it through; ``can_use_tool`` (which Claude Code
calls for it in any case) puts it in the inbox through orchestration's seam
(``SessionExtension.ask_user``), waits for the answer under the asks' timeout,
and gives it back as the tool's ``answers`` (each question's text to the chosen
labels, or the person's own words). Every decision is audited.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentdeck.core.agent import Agent
from agentdeck.core.ask_choices import TOOL, ChoiceError, questions_of, tool_answers
from agentdeck.core.asks import AskState
from agentdeck.core.policy import Decision
from agentdeck.core.redact import scrub
from agentdeck.governance.governor import Governor
from agentdeck.runner.extension import SessionExtension

if TYPE_CHECKING:
    from claude_agent_sdk.types import PermissionResult

logger = logging.getLogger(__name__)

DECK_ASK = "mcp__deck__ask_orchestrator"
PERSON = "a question for a person: it waits in the Asks inbox"


@dataclass(frozen=True)
class Judged:
    allowed: bool
    reason: str
    rule: str | None


async def judge(governor: Governor, agent: Agent, tool_input: dict[str, Any]) -> Judged:
    """Whether the agent may ask at all (the module doc says by which rules)."""
    grants = await governor.grants(agent)
    own = await governor.verdict(agent, TOOL, tool_input, grants)
    if own.decision is Decision.DENY and own.rule is not None:
        return Judged(False, own.reason, own.rule)
    asking = await governor.verdict(agent, DECK_ASK, {}, grants)
    if asking.decision is Decision.DENY:
        why = f"this agent may not ask questions ({asking.reason})"
        return Judged(False, why, asking.rule)
    return Judged(True, PERSON, own.rule)


async def pre_tool(governor: Governor, agent: Agent, tool_input: dict[str, Any]) -> Judged:
    """The hook's answer: through to ``can_use_tool`` (no approval), or refused."""
    judged = await judge(governor, agent, tool_input)
    decision = "ask" if judged.allowed else "deny"
    await governor.audit(agent, TOOL, tool_input, decision, judged.reason, judged.rule, "policy")
    return judged


async def answered(
    governor: Governor,
    extension: SessionExtension | None,
    agent: Agent,
    tool_input: dict[str, Any],
) -> PermissionResult:
    """``can_use_tool``'s answer: the person's choices as the tool's input."""
    from claude_agent_sdk.types import PermissionResultAllow, PermissionResultDeny

    judged = await judge(governor, agent, tool_input)
    if not judged.allowed:
        return PermissionResultDeny(message=judged.reason)
    try:
        questions = questions_of(tool_input, scrub)
    except ChoiceError as exc:
        why = f"AskUserQuestion was not asked: {exc}. Ask again within those bounds."
        await governor.audit(agent, TOOL, tool_input, "deny", why, None, "policy")
        return PermissionResultDeny(message=why)
    if extension is None:
        why = "Nobody can answer questions here: go on with your best judgement, and say so."
        await governor.audit(agent, TOOL, tool_input, "deny", why, None, "agentdeck")
        return PermissionResultDeny(message=why)
    ask = await extension.ask_user(agent, questions)
    if ask.state is not AskState.ANSWERED or ask.answer is None:
        waited = ask.expires_at - ask.created_at
        why = (
            f"Nobody answered your question ({ask.id}) within {waited:.0f}s: go on with "
            "your best judgement, and say what you assumed."
            if ask.state is AskState.EXPIRED
            else f"Your question ({ask.id}) was {ask.state}: nobody will answer it."
        )
        await governor.audit(agent, TOOL, tool_input, "deny", why, None, ask.answered_by)
        return PermissionResultDeny(message=why)
    try:
        answers = tool_answers(tool_input["questions"], ask.questions, ask.answer)
    except ChoiceError:  # kept in another form (an older row): the words as they are
        answers = {str(tool_input["questions"][0].get("question", "")): ask.answer}
    why = f"answered in the Asks inbox ({ask.id})"
    await governor.audit(agent, TOOL, tool_input, "allow", why, None, ask.answered_by)
    return PermissionResultAllow(updated_input={**tool_input, "answers": answers})
