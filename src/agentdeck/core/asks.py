"""Asks: a worker's question to its orchestrator (or a person), and notes.

An ask is to a question what an approval is to a tool call: a persisted request
with a deadline. ``pending → answered | expired | cancelled``. It is answered by
the agent it is addressed to (the asker's parent, through ``answer_request``) or
by a person (dashboard, CLI, API); an unanswered question expires at its
deadline and the worker is told so. An answer is *delivered* once the worker has
it: at once if it is waiting, else when it is next resumed.

A note (``notify_parent``) is one-way: ``pending`` until the parent is told it
with its next turn (or woken from ``wait_for_agents``), then ``delivered``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentdeck.core.ask_choices import ChoiceError, ChoiceQuestion, from_structured
from agentdeck.errors import UsageError


class AskKind(StrEnum):
    QUESTION = "question"
    NOTE = "note"


class AskState(StrEnum):
    PENDING = "pending"
    ANSWERED = "answered"
    EXPIRED = "expired"  # nobody answered in time; the worker was told to go on
    CANCELLED = "cancelled"  # the asker went away before an answer
    DELIVERED = "delivered"  # a note its recipient was told

    @property
    def is_open(self) -> bool:
        return self is AskState.PENDING


@dataclass(frozen=True)
class Ask:
    id: str
    kind: AskKind
    agent_id: str  # who asks (or notes)
    to_agent_id: str | None  # the orchestrator it is addressed to; None: a person
    text: str
    state: AskState
    created_at: float
    expires_at: float
    answered_at: float | None = None
    answered_by: str | None = None  # "agent:<id>", "user:<channel>", "timeout"
    answer: str | None = None
    delivered_at: float | None = None  # when the asker (or the note's recipient) had it
    # A multiple choice (Claude Code's AskUserQuestion): ``text`` is their
    # rendering, the answer is in ``ask_choices``' canonical form.
    questions: tuple[ChoiceQuestion, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """As stored (no questions: ``questions`` is null)."""
        return {
            "id": self.id,
            "kind": str(self.kind),
            "agent_id": self.agent_id,
            "to_agent_id": self.to_agent_id,
            "text": self.text,
            "state": str(self.state),
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "answered_at": self.answered_at,
            "answered_by": self.answered_by,
            "answer": self.answer,
            "delivered_at": self.delivered_at,
            "questions": [q.to_dict() for q in self.questions] if self.questions else None,
        }

    def to_public(self) -> dict[str, Any]:
        """As the API shows it: ``questions`` a list, empty for a plain question."""
        return self.to_dict() | {"questions": [q.to_dict() for q in self.questions]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Ask:
        """From ``to_dict`` (a row) or ``to_public`` (the API)."""
        questions = tuple(ChoiceQuestion.from_dict(q) for q in data.get("questions") or ())
        return cls(
            id=data["id"],
            kind=AskKind(data["kind"]),
            agent_id=data["agent_id"],
            to_agent_id=data.get("to_agent_id"),
            text=data["text"],
            state=AskState(data["state"]),
            created_at=data["created_at"],
            expires_at=data["expires_at"],
            answered_at=data.get("answered_at"),
            answered_by=data.get("answered_by"),
            answer=data.get("answer"),
            delivered_at=data.get("delivered_at"),
            questions=questions,
        )


def structured_answer(ask: Ask, answers: Mapping[str, Any]) -> str:
    """A multiple choice's answers given as data (the API's ``answers``), as the
    text ``answer_ask`` takes; ``UsageError`` says what is wrong."""
    if not ask.questions:
        raise UsageError(
            f"question {ask.id} is not a multiple choice",
            hint="answer it with `answer` (text); nothing was answered",
        )
    try:
        return from_structured(ask.questions, answers)
    except ChoiceError as exc:
        raise UsageError(f"{exc}; nothing was answered") from None
