"""What the deck tools say to the model. Pure: agents and asks in, text out.

Models read these, so they say what happened, what each agent's state means for
the caller, and what to call next.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agentdeck.core.agent import Agent
from agentdeck.core.asks import Ask
from agentdeck.core.summary import short
from agentdeck.core.transcript import cut

FINAL_MESSAGE_CHARS = 4000


def who(agent: Agent) -> str:
    template = f", {agent.spec.template}" if agent.spec.template else ""
    return f"{agent.name} ({agent.id}{template})"


def status_line(agent: Agent) -> str:
    """One child in ``list_agents``: state, tool, turns, cost, last result."""
    parts = [f"- {who(agent)}: {agent.state}"]
    if agent.current_tool:
        parts.append(f"running {agent.current_tool}")
    parts.append(f"{agent.turns} turns, ${agent.cost_usd:.4f}")
    last = str(agent.extra.get("last_result") or "")
    if last:
        parts.append(f"last result: {short(last, 200)!r}")
    if agent.last_error:
        parts.append(f"error: {short(agent.last_error, 200)}")
    return "; ".join(parts)


def children_text(children: Sequence[Agent]) -> str:
    if not children:
        return "You have no child agents yet. Start one with spawn_agent."
    lines = [f"Your {len(children)} child agent(s):"]
    lines += [status_line(c) for c in children]
    return "\n".join(lines)


def finished_line(agent: Agent) -> str:
    failed = bool(agent.extra.get("last_is_error")) or agent.state == "error"
    outcome = "ERROR" if failed else "ok"
    message = str(agent.extra.get("last_result") or agent.last_error or "(no final message)")
    line = (
        f"- {who(agent)}: {outcome}, state {agent.state}, {agent.turns} turns, "
        f"${agent.cost_usd:.4f}. Final message:\n{cut(message, FINAL_MESSAGE_CHARS)}"
    )
    if not failed and "structured_result" in agent.extra:  # core.output_schema
        data = json.dumps(agent.extra["structured_result"], ensure_ascii=False)
        line += f"\nStructured result: {data}"
    return line


def running_line(agent: Agent) -> str:
    doing = f", running {agent.current_tool}" if agent.current_tool else ""
    return f"- {who(agent)}: {agent.state}{doing}"


def question_line(ask: Ask, asker: str) -> str:
    return f"- question {ask.id} from {asker}: {cut(ask.text, FINAL_MESSAGE_CHARS)}"


def note_line(ask: Ask, sender: str) -> str:
    return f"- note from {sender}: {cut(ask.text, FINAL_MESSAGE_CHARS)}"


def wait_text(
    *,
    finished: Sequence[Agent],
    running: Sequence[Agent],
    questions: Sequence[str],
    notes: Sequence[str],
    outcome: str,
    waited: float,
    remaining: float = 0.0,
) -> str:
    """``outcome``: ``done`` (all, or any, finished), ``woken`` (a question or a
    note came), ``timeout`` (the caller's timeout), ``still`` (one call's cap)."""
    head = {
        "done": f"wait_for_agents: done after {waited:.0f}s.",
        "woken": f"wait_for_agents: woken after {waited:.0f}s — your workers need you.",
        "timeout": f"wait_for_agents: timed out after {waited:.0f}s; some are still running.",
        "still": (
            f"wait_for_agents: still waiting after {waited:.0f}s (one call waits at most that "
            "long). Call wait_for_agents again for the same agents, with "
            f"timeout_seconds={max(0, round(remaining))}, to wait the rest of your timeout."
        ),
    }[outcome]
    lines = [head]
    if questions:
        lines += [
            "Questions waiting for your answer (reply with answer_request(request_id, answer), "
            "then wait again):",
            *questions,
        ]
    if notes:
        lines += ["Notes from your workers:", *notes]
    if finished:
        lines += [f"Finished their turn ({len(finished)}):", *(finished_line(a) for a in finished)]
    if running:
        lines += [f"Still running ({len(running)}):", *(running_line(a) for a in running)]
    return "\n".join(lines)


def answered_text(ask: Ask, by: str) -> str:
    return f"Answer from {by} to your question ({ask.id}):\n{ask.answer}"


def expired_text(ask: Ask, seconds: float) -> str:
    return (
        f"Nobody answered your question ({ask.id}) within {seconds:.0f}s. Go on with your "
        "best judgement, and say in your final report what you assumed."
    )


def still_asking_text(ask: Ask, waited: float) -> str:
    return (
        f"No answer yet after {waited:.0f}s (one call waits at most that long); your question "
        f"{ask.id} stays open. Call ask_orchestrator(question, request_id={ask.id!r}) to keep "
        "waiting for it, or go on and the answer is given to you as a message when it comes."
    )


def late_answer_text(ask: Ask, by: str) -> str:
    return (
        f"The answer to your earlier question ({ask.id}: {short(ask.text, 200)!r}) came from "
        f"{by}:\n{ask.answer}"
    )


def question_for_parent(ask: Ask, asker: Agent) -> str:
    return (
        f"Your worker {who(asker)} asks (request {ask.id}):\n{ask.text}\n\n"
        f"Reply with answer_request({ask.id!r}, answer); it waits until you do."
    )


def notes_preamble(lines: Sequence[str]) -> str:
    return "\n".join(["Notes from your workers since your last turn:", *lines])


def restarted_waiting(children: Sequence[str]) -> str:
    """What an orchestrator resumed after a restart mid-wait is told."""
    return (
        "agentdeck restarted while you were waiting for your child agents "
        f"({', '.join(children)}). They keep their state and their "
        "work: call wait_for_agents again to go on waiting for them."
    )


def restarted_asking(ask_id: str) -> str:
    """What a worker resumed after a restart while it waited for an answer is told."""
    return (
        f"agentdeck restarted while you waited for an answer to your question "
        f"({ask_id}). It is still open: call ask_orchestrator(question, "
        f"request_id={ask_id!r}) to wait for its answer."
    )
