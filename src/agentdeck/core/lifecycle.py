"""Every change of an agent's state goes through ``transition()``.

The table of what may follow what is ``core.agent``'s (``can_transition``);
here it is applied: a legal change gives the agent in its new state and the
``StateChanged`` that says so, an illegal one is refused (the agent keeps its
state, no event) for the caller to log and count (``REFUSALS``), never to write.
Pure: nothing here reads a clock, a store or a process.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from agentdeck.core.agent import Agent, AgentState, can_transition
from agentdeck.core.events import StateChanged


@dataclass(frozen=True)
class Transition:
    """What a state change does: the agent after it, and the event that says so
    (none when the state stays, or when the change was refused)."""

    agent: Agent
    events: tuple[StateChanged, ...] = ()
    refused: bool = False


def transition(
    agent: Agent, new: AgentState, *, ts: float, reason: str | None = None
) -> Transition:
    """``agent`` moved to ``new`` if the lifecycle allows it; refused if not."""
    old = agent.state
    if new == old:
        return Transition(agent)
    if not can_transition(old, new):
        return Transition(agent, refused=True)
    moved = StateChanged(agent_id=agent.id, ts=ts, old=str(old), new=str(new), reason=reason)
    return Transition(agent.with_changes(state=new), (moved,))


class Refusals:
    """Illegal transitions asked for in this process, by ``old -> new``: none is
    ever written; the runner shows the count (a non-zero one is a bug to report)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()

    def note(self, agent: Agent, new: AgentState) -> str:
        """Count the refusal of ``agent``'s move to ``new``; the line to log."""
        key = f"{agent.state} -> {new}"
        self._counts[key] += 1
        return f"agent {agent.id}: refused the illegal transition {key}"

    @property
    def total(self) -> int:
        return sum(self._counts.values())

    def as_dict(self) -> dict[str, int]:
        return dict(self._counts)


REFUSALS = Refusals()  # this process's
